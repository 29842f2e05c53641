package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
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
	pause := s.cfg.RetryPause
	for {
		began := s.cfg.Clock.Now()
		err := s.runLeased(ctx, progress)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errLeaseLost) || errors.Is(err, payrecon.ErrLeaseLost) {
			s.cfg.Logger.Warn("sweep lease lost; waiting to take it again", "job", s.cfg.Job, "error", err)
			continue
		}
		if Fatal(err) {
			return err
		}
		if s.cfg.Clock.Now().Sub(began) > 4*s.cfg.RetryPauseMax {
			pause = s.cfg.RetryPause // it had been working: start the backoff again
		}
		s.metrics.retried(s.cfg.Job)
		s.cfg.Logger.Warn("sweep interrupted; retrying", "job", s.cfg.Job, "error", err, "retry_in", pause)
		if err := s.cfg.SleepFunc(ctx, pause); err != nil {
			return nil
		}
		pause = min(pause*2, s.cfg.RetryPauseMax)
	}
}

// Fatal reports whether err must stop a continuous sweep (or the service):
// a configuration error a person must fix, or a Stripe outage longer than
// Config.MaxOutage. Everything else (the database unavailable, a lease
// that could not be taken) is worth retrying.
func Fatal(err error) bool {
	return err != nil && (errors.Is(err, payrecon.ErrConfig) || errors.Is(err, ErrOutage))
}

var errLeaseLost = errors.New("lease lost")

func (s *Sweeper) runLeased(ctx context.Context, progress ProgressFunc) error {
	var lease Lease
	if s.cfg.LeaseFunc != nil {
		s.cfg.Logger.Info("waiting for the sweep lease", "job", s.cfg.Job)
		l, err := s.cfg.LeaseFunc(ctx, s.cfg.Job, true)
		if err != nil {
			return err
		}
		lease = l
		defer lease.Release(context.WithoutCancel(ctx)) //nolint:errcheck // the lock dies with the session anyway
		s.fence.Store(lease.Epoch())
		defer s.fence.Store(0)
		s.cfg.Logger.Info("sweep lease acquired", "job", s.cfg.Job, "epoch", lease.Epoch())
		s.metrics.setLeased(s.cfg.Job, true)
		defer s.metrics.setLeased(s.cfg.Job, false)
	}
	// List mode lists the next batches' windows while each batch commits.
	stopLookahead := s.startLookahead(ctx)
	defer stopLookahead()
	for {
		started := s.cfg.Clock.Now()
		rep := CycleReport{Job: s.cfg.Job, Counts: map[payrecon.Verdict]int{}}
		var outage outageTracker
		for !rep.Wrapped {
			if lease != nil {
				if err := lease.Alive(ctx); err != nil {
					return fmt.Errorf("%w: %w", errLeaseLost, err)
				}
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
		rep.StripeCalls += s.lister.takeUncounted()
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

// idle waits until next, running recheck batches as rows come due. With a
// lease it wakes at least every second to check that the lease is still
// held, and steps down (errLeaseLost) as soon as it is not.
func (s *Sweeper) idle(ctx context.Context, next time.Time, progress ProgressFunc, lease Lease) error {
	for {
		now := s.cfg.Clock.Now()
		if !now.Before(next) {
			return nil
		}
		wake := next
		if lease != nil {
			if err := lease.Alive(ctx); err != nil {
				return fmt.Errorf("%w: %w", errLeaseLost, err)
			}
			if check := now.Add(time.Second); check.Before(wake) {
				wake = check
			}
		}
		due, err := s.store.NextRecheck(ctx, s.cfg.Job, "")
		if err != nil {
			return err
		}
		if !due.IsZero() && due.Before(wake) {
			wake = due
		}
		if err := s.cfg.SleepFunc(ctx, wake.Sub(now)); err != nil {
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
