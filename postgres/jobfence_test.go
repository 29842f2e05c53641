package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// A replica frozen in the middle of a fenced commit holds its River job's
// row: River's rescuer, which rescues every stuck job in one statement,
// waited on it for as long as the replica slept (seen: no batch of any
// replica rescued for minutes). The server now ends the frozen transaction
// after postgres.FenceIdleTimeout, the rescue goes through, and the frozen
// commit fails.
func TestFrozenFencedCommitDoesNotBlockTheRescuer(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := t.Context()
	var id int64
	if err := pool.QueryRow(ctx, `INSERT INTO river_job (kind, args, state, attempt, max_attempts, attempted_at)
		VALUES ('payrecon_sweep_account', '{}', 'running', 1, 25, now()) RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	frozen, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Rollback(context.Background())
	if err := postgres.CheckJobFence(ctx, frozen, postgres.JobFence{JobID: id, Attempt: 1}); err != nil {
		t.Fatalf("fence of a running job: %v", err)
	}
	// The process freezes here: nothing more is sent on its transaction.
	start := time.Now()
	rescueCtx, cancel := context.WithTimeout(ctx, postgres.FenceIdleTimeout+20*time.Second)
	defer cancel()
	if _, err := pool.Exec(rescueCtx, "UPDATE river_job SET state = 'retryable' WHERE id = $1", id); err != nil {
		t.Fatalf("the rescuer's update waited on the frozen commit for %s: %v", time.Since(start).Round(time.Second), err)
	}
	t.Logf("rescued %s after the freeze", time.Since(start).Round(time.Millisecond))
	if err := frozen.Commit(ctx); err == nil {
		t.Fatal("the frozen transaction committed after its job was rescued")
	}
}
