package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// DrainReport says what one Drain did. The counts are this process's own
// attempts; another process draining at the same time reports its own.
type DrainReport struct {
	// Applied counts commands that moved their payment to the target state.
	Applied int `json:"applied"`
	// AlreadyDone counts commands whose payment was already in the target
	// state (a webhook got there first), or that had been applied before.
	AlreadyDone int `json:"already_done"`
	// Unapplied counts commands recorded without effect and left for review:
	// the payment had moved elsewhere or is missing, or the finding had
	// already been resolved.
	Unapplied int `json:"unapplied"`
	// Failed counts failed attempts (each is retried until its last).
	Failed int `json:"failed"`
	// DeadLettered counts commands that became dead letters: invalid, or
	// failed on their last attempt.
	DeadLettered int `json:"dead_lettered"`
	// RetryLater counts commands left scheduled for a retry beyond
	// Config.DrainRetryHorizon when the drain ended.
	RetryLater int `json:"retry_later"`
	// Duration is the time the drain took, on Config.Clock.
	Duration time.Duration `json:"duration_ns"`
}

// Drain applies every command that is due and exits: it runs the workers
// until no repair job is available, running (in any process) or due for a
// retry within Config.DrainRetryHorizon, then stops them cleanly. Jobs left
// running by a dead process are waited for: River's rescuer makes them due
// again after Config.RescueStuckJobsAfter. Retries scheduled beyond the
// horizon are left, and counted in RetryLater. If ctx ends first, Drain stops the workers (letting
// commands in flight finish) and returns what it did with ctx's error.
func (r *Relay) Drain(ctx context.Context) (DrainReport, error) {
	if r.cfg.InsertOnly {
		return DrainReport{}, fmt.Errorf("drain relay: %w", ErrInsertOnly)
	}
	start := r.cfg.Clock.Now()
	before := r.snapshot()
	if err := r.Start(ctx); err != nil {
		return DrainReport{}, fmt.Errorf("drain: %w", err)
	}
	later, waitErr := r.waitDrained(ctx, r.client.Stopped())
	// Stop even when ctx has ended: the commands in flight finish first.
	stopErr := r.Stop(context.WithoutCancel(ctx))
	rep := r.snapshot().minus(before)
	rep.RetryLater = later
	rep.Duration = r.cfg.Clock.Now().Sub(start)
	if waitErr != nil {
		return rep, fmt.Errorf("drain: %w", waitErr)
	}
	if stopErr != nil {
		return rep, fmt.Errorf("drain: %w", stopErr)
	}
	r.log.Info("relay: drained", slog.Int("applied", rep.Applied), slog.Int("already_done", rep.AlreadyDone),
		slog.Int("unapplied", rep.Unapplied), slog.Int("failed", rep.Failed), slog.Int("dead_lettered", rep.DeadLettered),
		slog.Int("retry_later", rep.RetryLater), slog.Duration("duration", rep.Duration))
	return rep, nil
}

// waitDrained polls the queue until nothing is due or running, and returns
// how many jobs are scheduled beyond the horizon.
func (r *Relay) waitDrained(ctx context.Context, stopped <-chan struct{}) (int, error) {
	tick := time.NewTicker(r.cfg.DrainPollInterval)
	defer tick.Stop()
	for {
		var (
			busy  bool
			later int
		)
		if err := r.pool.QueryRow(ctx, queries.Get("drain_state"), pgx.StrictNamedArgs{"kind": Kind, "queue": Queue, "horizon": r.cfg.DrainRetryHorizon}).Scan(&busy, &later); err != nil {
			return 0, fmt.Errorf("read the state of queue %q: %w", Queue, err)
		}
		if !busy {
			return later, nil
		}
		select {
		case <-ctx.Done():
			return later, ctx.Err()
		case <-stopped:
			return later, errors.New("the relay was stopped before the queue was drained")
		case <-tick.C:
		}
	}
}

func (r *Relay) snapshot() DrainReport {
	return DrainReport{
		Applied:      int(r.stats.applied.Load()),
		AlreadyDone:  int(r.stats.alreadyDone.Load()),
		Unapplied:    int(r.stats.unapplied.Load()),
		Failed:       int(r.stats.failed.Load()),
		DeadLettered: int(r.stats.deadLettered.Load()),
	}
}

func (a DrainReport) minus(b DrainReport) DrainReport {
	return DrainReport{
		Applied:      a.Applied - b.Applied,
		AlreadyDone:  a.AlreadyDone - b.AlreadyDone,
		Unapplied:    a.Unapplied - b.Unapplied,
		Failed:       a.Failed - b.Failed,
		DeadLettered: a.DeadLettered - b.DeadLettered,
	}
}
