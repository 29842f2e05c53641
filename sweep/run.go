package sweep

import (
	"context"
	"errors"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/leased"
)

// Run sweeps continuously: cycle after cycle at the rate budget, sleeping
// only when a cycle completes sooner than Config.MinCycle (and rechecking
// due rows while it waits). With a LeaseFunc it first waits for the job's
// lease, so of several replicas exactly one sweeps and another takes over
// when it dies; if the lease is lost it stops sweeping and waits for the
// lease again. It returns on ctx's end (nil), on a configuration error, and
// on a Stripe outage longer than Config.MaxOutage. Any other failure (the
// database refusing connections or restarting, the lease unobtainable) is
// logged and retried with backoff (Config.RetryPause doubling up to
// Config.RetryPauseMax): the process stays up and resumes by itself.
func (s *Sweeper) Run(ctx context.Context, progress ProgressFunc) error {
	return leased.Run(ctx, s.leaseConfig(), func(ctx context.Context, lease payrecon.Lease) error {
		return s.runLeased(ctx, progress, lease)
	})
}

// StopsSweeping reports whether err must stop a continuous sweep (or the service):
// a configuration error a person must fix, or a Stripe outage longer than
// Config.MaxOutage. Everything else (the database unavailable, a lease
// that could not be taken) is worth retrying.
func StopsSweeping(err error) bool {
	return err != nil && (errors.Is(err, payrecon.ErrConfig) || errors.Is(err, ErrOutage))
}

// runLeased sweeps cycle after cycle under lease (nil: none), checking it
// before every batch and while it idles.
func (s *Sweeper) runLeased(ctx context.Context, progress ProgressFunc, lease payrecon.Lease) error {
	// List mode lists the next batches' windows while each batch commits.
	stopLookahead := s.startLookahead(ctx)
	defer stopLookahead()
	for {
		started := s.cfg.Clock.Now()
		rep := CycleReport{Job: s.cfg.Job, Counts: map[payrecon.Verdict]int{}}
		var outage outageTracker
		for !rep.Wrapped {
			if err := leased.Alive(ctx, lease); err != nil {
				return err
			}
			err := s.step(ctx, &rep, &outage, false, progress)
			if ctx.Err() != nil {
				return nil // the batch in progress was committed (or discarded whole)
			}
			if err != nil {
				return err
			}
		}
		rep.Duration = s.cfg.Clock.Now().Sub(started)
		rep.StripeCalls += s.takeUncounted()
		s.metrics.cycleDone(s.cfg.Job, rep)
		s.cfg.Logger.Info("sweep cycle complete", "job", s.cfg.Job, "rows", rep.Scanned,
			"duration", rep.Duration.Round(time.Millisecond), "new_findings", rep.NewFindings, "resolved", rep.Resolved)
		if err := s.idle(ctx, started.Add(s.cfg.MinCycle), progress, lease); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// idle waits until next, running recheck batches as rows come due, and
// steps down (leased.ErrLost) as soon as the lease is lost: leased.Wait
// checks it every second.
func (s *Sweeper) idle(ctx context.Context, next time.Time, progress ProgressFunc, lease payrecon.Lease) error {
	for {
		now := s.cfg.Clock.Now()
		if !now.Before(next) {
			return nil
		}
		wake := next
		due, err := s.store.NextRecheck(ctx, s.cfg.Job, "")
		if err != nil {
			return err
		}
		if !due.IsZero() && due.Before(wake) {
			wake = due
		}
		if err := leased.Wait(ctx, lease, wake.Sub(now), s.cfg.Clock, s.cfg.SleepFunc); err != nil {
			return err
		}
		if !due.IsZero() && !s.cfg.Clock.Now().Before(due) {
			b, err := s.runBatch(ctx, true)
			if err != nil && !errors.Is(err, payrecon.ErrUnavailable) {
				return err
			}
			if err == nil && progress != nil {
				progress(b, CycleReport{Job: s.cfg.Job, Counts: b.Counts})
			}
		}
	}
}
