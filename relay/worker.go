package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
)

// repairWorker applies one outbox command per job.
type repairWorker struct {
	river.WorkerDefaults[RepairArgs]
	relay *Relay
}

// Work applies the command and completes the job in one transaction. A
// permanently invalid command is cancelled at once (a dead letter); any other
// error goes back to River, which retries it until MaxAttempts and then
// discards it (a dead letter too). Both are written to outbox.last_error.
// A command held for review and not approved is cancelled without effect.
func (w *repairWorker) Work(ctx context.Context, job *river.Job[RepairArgs]) error {
	r := w.relay
	id := job.Args.OutboxID
	start := time.Now()
	res, err := r.apply(ctx, job)
	if err == nil {
		r.metric.observe(r.count(res), time.Since(start), time.Since(job.CreatedAt))
		r.log.Debug("relay: applied", slog.Int64("outbox_id", id), slog.Int64("job_id", job.ID),
			slog.String("command", string(res.Command)), slog.String("outcome", res.Outcome),
			slog.Bool("already_processed", res.AlreadyProcessed), slog.Bool("finding_resolved", res.Resolved))
		return nil
	}
	var invalid *postgres.InvalidCommandError
	if errors.As(err, &invalid) {
		r.recordError(ctx, id, err)
		r.stats.deadLettered.Add(1)
		r.metric.observe("dead_lettered", 0, 0)
		r.log.Error("relay: invalid command dead-lettered", slog.Int64("outbox_id", id), slog.Int64("job_id", job.ID),
			slog.String("error", err.Error()))
		return river.JobCancel(err)
	}
	var held *postgres.HeldCommandError
	if errors.As(err, &held) {
		// Not approved: the job came here without an approval (River's
		// dashboard, relay --retry). Cancelled, so it is visible; the
		// command stays held, and approval makes the job run again.
		r.recordError(ctx, id, err)
		r.metric.observe("held", 0, 0)
		r.log.Warn("relay: command held for review reached a worker without an approval; not applied", slog.Int64("outbox_id", id),
			slog.Int64("job_id", job.ID))
		return river.JobCancel(err)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// The relay is stopping: River puts the job back without counting
		// the attempt.
		return err
	}
	r.recordError(ctx, id, err)
	r.stats.failed.Add(1)
	r.metric.observe("failed", 0, 0)
	if job.Attempt >= job.MaxAttempts {
		r.stats.deadLettered.Add(1)
		r.metric.observe("dead_lettered", 0, 0)
		r.log.Error("relay: command dead-lettered after its last attempt", slog.Int64("outbox_id", id),
			slog.Int64("job_id", job.ID), slog.Int("attempt", job.Attempt), slog.String("error", err.Error()))
	} else {
		r.log.Warn("relay: attempt failed; River retries it", slog.Int64("outbox_id", id), slog.Int64("job_id", job.ID),
			slog.Int("attempt", job.Attempt), slog.Int("max_attempts", job.MaxAttempts), slog.String("error", err.Error()))
	}
	return err
}

// beginRepair begins a repair's transaction, in the same round trip as
// BEGIN (pgx sends a query without arguments over the simple protocol),
// with generic plans for its statements. Every statement of a repair looks
// rows up by primary key, so the generic plan is the right one; PostgreSQL
// would otherwise plan the writer's CTE and River's completion query anew
// on every execution (their array parameters make the generic plan look
// costlier than it is), which costs about a fifth of the relay's
// throughput.
const beginRepair = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan"

// commitTimeout bounds a repair's COMMIT, which runs past the attempt's own
// deadline.
const commitTimeout = 10 * time.Second

// apply runs the command and completes the job in one transaction, so the
// effect and "done" commit together.
func (r *Relay) apply(ctx context.Context, job *river.Job[RepairArgs]) (postgres.RepairResult, error) {
	id := job.Args.OutboxID
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: beginRepair})
	if err != nil {
		return postgres.RepairResult{}, fmt.Errorf("apply outbox %d: begin: %w", id, err)
	}
	// Roll back before anything else touches the outbox row: this
	// transaction holds its lock.
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	res, err := r.writer.ApplyRepair(ctx, tx, id)
	if err != nil {
		var invalid *postgres.InvalidCommandError
		if errors.As(err, &invalid) {
			return res, err // already names the outbox id
		}
		return res, fmt.Errorf("apply outbox %d: %w", id, err)
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return res, fmt.Errorf("apply outbox %d: complete job %d: %w", id, job.ID, err)
	}
	// The work is done: the commit does not race the attempt's deadline.
	// A COMMIT cut off by the deadline may still complete on the server,
	// and the attempt would be counted as failed while its effect and its
	// job's completion stand (nothing applies twice, but the counts lie).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return res, fmt.Errorf("apply outbox %d: commit: %w", id, err)
	}
	return res, nil
}

// recordError writes err to the outbox row's last_error. It runs after the
// attempt's transaction has rolled back, on a context that survives the
// attempt's cancellation; a failure here is logged, never returned (the
// attempt's own error is what River must see).
func (r *Relay) recordError(ctx context.Context, outboxID int64, cause error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.pool.Exec(ctx, queries.Get("record_error"), pgx.StrictNamedArgs{"outbox_id": outboxID, "error": cause.Error()}); err != nil {
		r.log.Warn("relay: could not record the error on the outbox row", slog.Int64("outbox_id", outboxID),
			slog.String("error", err.Error()))
	}
}

// count adds one applied command to the counters and returns its outcome
// label.
func (r *Relay) count(res postgres.RepairResult) string {
	switch {
	case res.AlreadyProcessed || res.Apply.Outcome == payrecon.AlreadyInTarget:
		r.stats.alreadyDone.Add(1)
		return "already_done"
	case res.Apply.Outcome == payrecon.Applied:
		r.stats.applied.Add(1)
		return "applied"
	default: // moved elsewhere, payment missing, finding already resolved
		r.stats.unapplied.Add(1)
		return "unapplied"
	}
}
