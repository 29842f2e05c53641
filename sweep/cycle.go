package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/leased"
)

// CycleReport sums the batches of one RunCycle.
type CycleReport struct {
	Job         string                   `json:"job"`
	Batches     int                      `json:"batches"`
	Scanned     int                      `json:"scanned"`
	Rechecked   int                      `json:"rechecked"`
	Counts      map[payrecon.Verdict]int `json:"counts"`
	Verified    int                      `json:"verified"`
	NewFindings int                      `json:"new_findings"`
	Resolved    int                      `json:"resolved"`
	Commands    int                      `json:"commands"`
	StripeCalls int                      `json:"stripe_calls"`
	// ConcurrentRuns counts batches discarded because another run moved
	// the cursor first.
	ConcurrentRuns int `json:"concurrent_runs"`
	// Pauses counts systemic-failure pauses.
	Pauses  int  `json:"pauses"`
	Wrapped bool `json:"wrapped"`
	// StillUnverifiable counts rows still queued for recheck because Stripe
	// could not be asked about them; the cycle is not fully verified.
	StillUnverifiable int           `json:"still_unverifiable"`
	Duration          time.Duration `json:"duration_ns"`
}

func (r *CycleReport) add(b BatchReport) {
	if !b.Wrapped { // the wrap reads an empty batch; it is not one
		r.Batches++
	}
	r.Scanned += b.Scanned
	r.Rechecked += b.Rechecked
	for v, n := range b.Counts {
		r.Counts[v] += n
	}
	r.Verified += b.Verified
	r.NewFindings += b.NewFindings
	r.Resolved += b.Resolved
	r.Commands += b.Commands
	r.StripeCalls += b.StripeCalls
}

// Add sums another job's cycle into r (a platform's accounts, each its own
// job, as one figure). Wrapped stays true only if both wrapped.
func (r *CycleReport) Add(o CycleReport) {
	r.Batches += o.Batches
	r.Scanned += o.Scanned
	r.Rechecked += o.Rechecked
	if r.Counts == nil {
		r.Counts = map[payrecon.Verdict]int{}
	}
	for v, n := range o.Counts {
		r.Counts[v] += n
	}
	r.Verified += o.Verified
	r.NewFindings += o.NewFindings
	r.Resolved += o.Resolved
	r.Commands += o.Commands
	r.StripeCalls += o.StripeCalls
	r.ConcurrentRuns += o.ConcurrentRuns
	r.Pauses += o.Pauses
	r.Wrapped = r.Wrapped && o.Wrapped
	r.StillUnverifiable += o.StillUnverifiable
	r.Duration = max(r.Duration, o.Duration)
}

// ErrOutage is returned by RunCycle when Stripe stayed unavailable for
// longer than Config.MaxOutage.
var ErrOutage = errors.New("stripe outage outlasted the sweep's patience")

// ProgressFunc is told after every batch.
type ProgressFunc func(b BatchReport, total CycleReport)

// RunCycle sweeps from the job's cursor until it wraps (on a fresh job:
// every row once), then rechecks rows left unverifiable as they come due, for
// at most Config.RecheckWait. With a LeaseFunc it holds the job's lease
// throughout. It stops at once on a configuration error, pauses with backoff
// on a systemic Stripe failure and gives up (ErrOutage) after
// Config.MaxOutage of it, and on ctx's end returns between batches (a batch
// is committed whole or not at all).
func (s *Sweeper) RunCycle(ctx context.Context, progress ProgressFunc) (rep CycleReport, err error) {
	rep = CycleReport{Job: s.cfg.Job, Counts: map[payrecon.Verdict]int{}}
	err = leased.Hold(ctx, s.leaseConfig(), s.cfg.WaitForLease, func(ctx context.Context, _ payrecon.Lease) error {
		rep, err = s.runCycle(ctx, progress)
		return err
	})
	return rep, err
}

// leaseConfig is the job's leased loop (Run, RunCycle).
func (s *Sweeper) leaseConfig() leased.Config {
	return leased.Config{
		Job: s.cfg.Job, What: "sweep", LeaseFunc: s.cfg.LeaseFunc, Fatal: StopsSweeping,
		RetryPause: s.cfg.RetryPause, RetryPauseMax: s.cfg.RetryPauseMax,
		OnLease: func(epoch int64) {
			s.fence.Store(epoch)
			s.metrics.setLeased(s.cfg.Job, epoch != 0)
		},
		OnRetry: func() { s.metrics.retried(s.cfg.Job) },
		Clock:   s.cfg.Clock, Sleep: s.cfg.SleepFunc, Logger: s.cfg.Logger,
	}
}

// runCycle is RunCycle under the lease.
func (s *Sweeper) runCycle(ctx context.Context, progress ProgressFunc) (rep CycleReport, err error) {
	start := s.cfg.Clock.Now()
	rep = CycleReport{Job: s.cfg.Job, Counts: map[payrecon.Verdict]int{}}
	defer func() { rep.Duration = s.cfg.Clock.Now().Sub(start) }()

	// List mode lists the next batches' windows while each batch commits.
	stopLookahead := s.startLookahead(ctx)
	defer stopLookahead()
	var outage outageTracker
	for !rep.Wrapped {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := s.step(ctx, &rep, &outage, false, progress); err != nil {
			return rep, err
		}
	}
	stopLookahead()
	rep.StripeCalls += s.takeUncounted()

	// Rows Stripe could not be asked about are retried as they come due,
	// instead of waiting a whole cycle.
	deadline := s.cfg.Clock.Now().Add(s.cfg.RecheckWait)
	for {
		due, err := s.store.NextRecheck(ctx, s.cfg.Job, payrecon.RecheckUnverifiable)
		if err != nil {
			return rep, err
		}
		if due.IsZero() {
			break
		}
		if due.After(deadline) {
			break
		}
		wait := due.Sub(s.cfg.Clock.Now())
		if err := s.cfg.SleepFunc(ctx, wait); err != nil {
			return rep, err
		}
		if err := s.step(ctx, &rep, &outage, true, progress); err != nil {
			return rep, err
		}
	}
	pending, err := s.store.PendingRechecks(ctx, s.cfg.Job)
	if err != nil {
		return rep, err
	}
	rep.StillUnverifiable = pending[payrecon.RecheckUnverifiable]
	s.metrics.cycleDone(s.cfg.Job, rep)
	return rep, nil
}

// step runs one batch (it survives ctx's end for Config.StopGrace) and adds
// it to rep. A failed batch is handled by pauseOrFail: nil means the caller
// goes on (after a pause, or at once after a concurrent run), an error ends
// the cycle.
func (s *Sweeper) step(ctx context.Context, rep *CycleReport, outage *outageTracker, rechecksOnly bool, progress ProgressFunc) error {
	start := s.cfg.Clock.Now()
	b, err := s.runBatchGracefully(ctx, rechecksOnly)
	if err != nil {
		return s.pauseOrFail(ctx, rep, outage, start, err)
	}
	*outage = outageTracker{}
	rep.add(b)
	rep.Wrapped = rep.Wrapped || b.Wrapped
	if progress != nil {
		progress(b, *rep)
	}
	return nil
}

type outageTracker struct {
	since time.Time
	pause time.Duration
}

// pauseOrFail handles a failed batch: nil means "try again" (after a pause
// for a systemic failure, at once for a concurrent run); any other result
// ends the cycle. The outage is measured from the start of the first
// failed batch (a batch against an unreachable Stripe can itself take long:
// timeouts and stripe-go's retries), and no pause runs past MaxOutage, so
// the sweep gives up at most one batch's duration after it.
func (s *Sweeper) pauseOrFail(ctx context.Context, rep *CycleReport, o *outageTracker, batchStart time.Time, err error) error {
	var sys *SystemicFailureError
	switch {
	case errors.Is(err, payrecon.ErrConcurrentRun):
		rep.ConcurrentRuns++
		s.cfg.Logger.Warn("another run moved the cursor; batch discarded", "job", s.cfg.Job, "error", err)
		return nil
	case errors.As(err, &sys):
		if o.since.IsZero() {
			o.since, o.pause = batchStart, s.cfg.OutagePause
		}
		elapsed := s.cfg.Clock.Now().Sub(o.since)
		if elapsed >= s.cfg.MaxOutage {
			return fmt.Errorf("job %q: %w (%s): %w", s.cfg.Job, ErrOutage, s.cfg.MaxOutage, err)
		}
		pause := min(o.pause, s.cfg.MaxOutage-elapsed)
		rep.Pauses++
		s.metrics.pausedFor(s.cfg.Job, err)
		s.cfg.Logger.Warn("stripe outage: sweep paused", "job", s.cfg.Job, "pause", pause, "error", err)
		if serr := s.cfg.SleepFunc(ctx, pause); serr != nil {
			return serr
		}
		o.pause = min(o.pause*2, s.cfg.OutagePauseMax)
		return nil
	}
	return err
}
