package relay

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon/postgres"
)

// PruneKind is the River job kind of the periodic prune: history past its
// retention (postgres.PruneTargets) deleted in bounded batches.
const PruneKind = "payrecon_prune"

// Defaults of the periodic prune.
const (
	// PruneIntervalDefault is how often River's leader schedules a prune.
	PruneIntervalDefault = time.Hour
	// PruneBudget is how long one periodic prune may run before it stops
	// starting batches; the rest waits for the next one (hundreds of
	// thousands of rows fit in it: docs/benchmarks.md). It bounds the job
	// (its River timeout is twice this, so a prune never looks stuck) and
	// how long a stopping service waits for a prune in progress.
	PruneBudget = 10 * time.Second
	// RiverJobRetentionDefault is how long completed River jobs are kept
	// (River's own default): the outbox row stays the durable record of
	// the command; the job is how it got delivered, on /riverui/ for a day.
	RiverJobRetentionDefault = 24 * time.Hour
)

// PruneRiverJobs names completed River jobs in prune reports and in
// payrecon_prune_rows_total.
const PruneRiverJobs = "river_jobs"

// PruneArgs are the (empty) arguments of the periodic prune job.
type PruneArgs struct{}

// Kind implements river.JobArgs.
func (PruneArgs) Kind() string { return PruneKind }

// InsertOpts implements river.JobArgsWithInsertOpts: on the repairs queue,
// and at most one waiting or running at a time.
func (PruneArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       Queue,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

type pruneWorker struct {
	river.WorkerDefaults[PruneArgs]
	relay *Relay
}

// Timeout gives a prune twice its budget, longer than a repair's.
func (w *pruneWorker) Timeout(*river.Job[PruneArgs]) time.Duration { return 2 * PruneBudget }

// Work prunes payrecon's own tables for at most PruneBudget. Completed
// River jobs are left to River's cleaner, which runs on the same leader.
func (w *pruneWorker) Work(ctx context.Context, _ *river.Job[PruneArgs]) error {
	rep, err := w.relay.pruner.Prune(ctx, postgres.PruneOpts{Deadline: w.relay.cfg.Clock.Now().Add(PruneBudget)})
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if rep.Deleted > 0 {
		w.relay.log.Info("relay: pruned history past its retention", slog.Int64("rows", rep.Deleted))
	}
	return nil
}

// pruneJob is the periodic job River's leader inserts every interval (and
// once when it starts).
func pruneJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return PruneArgs{}, nil },
		&river.PeriodicJobOpts{ID: PruneKind, RunOnStart: true})
}

// PruneOnceOpts are the options of PruneOnce.
type PruneOnceOpts struct {
	// DryRun counts what would go, deleting nothing.
	DryRun bool
}

// PruneOnce prunes every target until done, for `payrecon prune --once`
// (cron): payrecon's tables through the pruner, then completed River jobs
// of payrecon's kinds older than Config.RiverJobRetention, deleted by
// River (JobDeleteMany) in bounded batches. (In the service River's cleaner
// does the latter; a process that only runs from cron is never River's
// leader long enough.) Dead letters are never deleted.
func (r *Relay) PruneOnce(ctx context.Context, opts PruneOnceOpts) (postgres.PruneReport, error) {
	rep, err := r.pruner.Prune(ctx, postgres.PruneOpts{DryRun: opts.DryRun})
	if err != nil {
		return rep, err
	}
	tr, err := r.pruneRiverJobs(ctx, opts.DryRun)
	rep.Targets = append(rep.Targets, tr)
	rep.Deleted += tr.Deleted
	return rep, err
}

// payreconKinds are the job kinds payrecon inserts: the only ones PruneOnce
// deletes (other applications may share River's tables).
var payreconKinds = []string{Kind, AdoptKind, PruneKind}

func (r *Relay) pruneRiverJobs(ctx context.Context, dryRun bool) (postgres.TargetReport, error) {
	retention := r.cfg.RiverJobRetention
	if retention < 0 {
		retention = 0
	}
	tr := postgres.TargetReport{Target: PruneRiverJobs, Table: "river_job", Retention: postgres.FormatRetention(retention)}
	if retention == 0 {
		tr.Skipped = "kept for ever"
		return tr, nil
	}
	tr.Before = r.cfg.Clock.Now().Add(-retention)
	args := pgx.StrictNamedArgs{"kinds": payreconKinds, "before": tr.Before, "limit": r.cfg.PruneBatch}
	if dryRun {
		if err := r.pool.QueryRow(ctx, queries.Get("completed_jobs_count"), pgx.StrictNamedArgs{"kinds": payreconKinds, "before": tr.Before}).Scan(&tr.Deleted); err != nil {
			return tr, fmt.Errorf("count completed jobs before %s: %w", tr.Before.Format(time.RFC3339), err)
		}
		return tr, nil
	}
	for {
		start := time.Now() // a measurement of the batch
		rows, err := r.pool.Query(ctx, queries.Get("completed_jobs"), args)
		if err != nil {
			return tr, fmt.Errorf("find completed jobs before %s: %w", tr.Before.Format(time.RFC3339), err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return tr, fmt.Errorf("find completed jobs before %s: %w", tr.Before.Format(time.RFC3339), err)
		}
		if len(ids) == 0 {
			return tr, nil
		}
		// River deletes them, re-checking each is still completed.
		res, err := r.client.JobDeleteMany(ctx, river.NewJobDeleteManyParams().IDs(ids...).
			States(rivertype.JobStateCompleted).First(len(ids)))
		if err != nil {
			return tr, fmt.Errorf("delete %d completed jobs: %w", len(ids), err)
		}
		n := int64(len(res.Jobs))
		tr.Batches++
		tr.Deleted += n
		tr.LongestBatch = max(tr.LongestBatch, time.Since(start))
		r.metric.pruned.WithLabelValues(PruneRiverJobs).Add(float64(n))
		if n == 0 || len(ids) < r.cfg.PruneBatch {
			return tr, nil // done, or what is left is no longer completed
		}
	}
}
