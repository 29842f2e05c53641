package sweep_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// refuseConnections makes the test's own database refuse new connections
// and ends its sessions (on) or accepts them again (off).
func refuseConnections(t *testing.T, db string, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{db}.Sanitize(), !on)); err != nil {
		t.Fatal(err)
	}
	if on {
		if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", db); err != nil {
			t.Fatal(err)
		}
	}
}

// A database that refuses connections for a few seconds, mid-cycle and
// while the lease is being taken, does not stop Run: it retries with
// backoff and completes the cycle once the database is back (issue 13,
// defect 2; it used to return the lease's error, and `run` exited 1).
func TestRunSurvivesRefusedConnections(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(600))
	db := b.pool.Config().ConnConfig.Database
	var attempts atomic.Int32
	lease := func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		attempts.Add(1)
		return postgres.AcquireLease(ctx, b.pool, job, wait)
	}
	var calls atomic.Int32
	b.gw.hook = func(ctx context.Context, id string) {
		if calls.Add(1) == 150 { // mid-cycle: the next commits fail
			refuseConnections(t, db, true)
		}
	}
	s := b.sweeper(sweep.Config{Batch: 50, Concurrency: 1, MinCycle: sweep.Off, LeaseFunc: lease, SleepFunc: payrecon.Sleep,
		RetryPause: 100 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	t.Cleanup(func() { refuseConnections(t, db, false) })

	testkit.WaitFor(t, "the database to be refused", 60*time.Second, func() bool { return calls.Load() >= 150 })
	refused := time.Now()
	for time.Since(refused) < 3*time.Second {
		select {
		case err := <-done:
			t.Fatalf("Run returned while the database refused connections: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	before := attempts.Load()
	refuseConnections(t, db, false)
	testkit.WaitFor(t, "every row verified after the outage", 60*time.Second, func() bool {
		return b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL") == 0
	})
	if before < 2 {
		t.Errorf("lease taken %d times before the database came back: want retries while it refused", before)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not stop")
	}
}
