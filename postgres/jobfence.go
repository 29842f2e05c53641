package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// jobFenceKey carries a JobFence in a context.
type jobFenceKey struct{}

// JobFence is the River job a batch runs as (a platform's account sweep,
// one batch per job): its commit, and its wrap, write only while that job
// is still running in the attempt that read the batch. If River's rescuer
// gave the job to another replica (this one froze, or lost its database
// connection for longer than the rescue bound), the commit fails with
// ErrLeaseLost and writes nothing, as under a lost lease. The check locks
// the job's row, so a takeover waits for a commit in progress.
type JobFence struct {
	JobID   int64
	Attempt int
}

// WithJobFence returns ctx carrying f: CommitBatch and Wrap called with it
// check the job in their transaction.
func WithJobFence(ctx context.Context, f JobFence) context.Context {
	return context.WithValue(ctx, jobFenceKey{}, f)
}

// checkJobFence checks the context's JobFence, if any, inside tx.
func checkJobFence(ctx context.Context, tx pgx.Tx, job string) error {
	f, ok := ctx.Value(jobFenceKey{}).(JobFence)
	if !ok {
		return nil
	}
	return checkFenceOf(ctx, tx, job, f)
}

// CheckJobFence fails with ErrLeaseLost, inside tx, when the River job is
// no longer running in f's attempt, and locks its row until tx ends.
func CheckJobFence(ctx context.Context, tx pgx.Tx, f JobFence) error {
	return checkFenceOf(ctx, tx, fmt.Sprintf("river job %d", f.JobID), f)
}

// FenceIdleTimeout is how long a fenced transaction may sit idle in the
// server (its process frozen or cut off) before PostgreSQL ends it and
// releases the River job's row, so that River's rescuer never waits on a
// frozen replica's commit (queries/job_fence_idle_timeout.sql).
const FenceIdleTimeout = 10 * time.Second

func checkFenceOf(ctx context.Context, tx pgx.Tx, job string, f JobFence) error {
	var (
		state   string
		attempt int
	)
	if _, err := tx.Exec(ctx, queries.Get("job_fence_idle_timeout"),
		pgx.StrictNamedArgs{"timeout": fmt.Sprintf("%dms", FenceIdleTimeout.Milliseconds())}); err != nil {
		return fmt.Errorf("bound the idle time of %q's fenced transaction: %w", job, err)
	}
	err := tx.QueryRow(ctx, queries.Get("job_fence"), pgx.StrictNamedArgs{"id": f.JobID}).Scan(&state, &attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		return &LeaseLostError{Job: job, Epoch: int64(f.Attempt), Description: fmt.Sprintf("River job %d is gone", f.JobID)}
	}
	if err != nil {
		return fmt.Errorf("check River job %d of %q: %w", f.JobID, job, err)
	}
	if state != "running" || attempt != f.Attempt {
		return &LeaseLostError{Job: job, Epoch: int64(f.Attempt), Now: int64(attempt),
			Description: fmt.Sprintf("River job %d is %s in attempt %d (rescued and given to another worker)", f.JobID, state, attempt)}
	}
	return nil
}
