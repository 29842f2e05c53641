// Package catchup is the events catch-up: it lists Stripe's events
// (GET /v1/events) for the types the webhook endpoint handles, oldest first,
// from a cursor kept in the database, and feeds each one through exactly
// the webhook's code path after the transport: payrecon.ParseEvent, then
// the same payrecon.EventProcessor (same shape checks, same dedupe by event
// id, same canonical writer, same findings). A webhook the endpoint lost is
// then applied within one interval instead of when the sweep reaches its
// row; an event the endpoint already processed is a no-op, and a webhook
// arriving after its event was caught up is a duplicate.
//
// Guarantees:
//   - one catcher at a time per job: the catcher holds the job's lease
//     (like the sweep's) while it runs;
//   - the cursor moves past an event only after the event was processed,
//     and only by compare-and-set, so two catchers (a lease lost mid-round,
//     a pooler that breaks session locks) can never skip an event, and the
//     dedupe by event id means none is applied twice;
//   - Stripe's list is eventually consistent: an event can become visible
//     after newer ones were listed and the cursor moved past it. Every
//     round lists again the Overlap (default two minutes) behind the
//     cursor and processes what it had not seen; when nothing else
//     happened that is the round's one request (the overlap and the new
//     events come in one page);
//   - a cursor older than Stripe's 30 days, or one Stripe refuses, is
//     restarted from the 30-day bound and the loss (if any) is logged,
//     recorded (status) and counted (metrics): the sweep covers what
//     Stripe no longer has;
//   - every request waits on the sweep's rate budget (the same
//     *budget.Limiter) and slows it down on 429;
//   - when nothing happens, a round is one request.
package catchup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/leased"
)

// Defaults of Config.
const (
	// JobDefault names the catch-up's cursor and lease.
	JobDefault = "events"
	// IntervalDefault is the time between rounds of Run.
	IntervalDefault = 30 * time.Second
	// SinceDefault is how far back the first round reaches.
	SinceDefault = 72 * time.Hour
	// retentionMargin keeps the catch-up an hour clear of Stripe's 30-day
	// edge, where events vanish while a walk uses them as cursors.
	retentionMargin = time.Hour
	// checkOverlap: a restart from the last check goes back this far, for
	// events Stripe lists a little late (the dedupe makes the overlap free
	// of effects).
	checkOverlap = time.Minute
	// OverlapDefault is how far behind the cursor every round lists again,
	// for events Stripe lists late (Config.Overlap).
	OverlapDefault = 2 * time.Minute
	pageSize       = 100
)

// Outcomes a catch-up records besides the processor's own.
const (
	// OutcomeDuplicate: the event had been processed already (by the
	// webhook, or an earlier round).
	OutcomeDuplicate = "duplicate"
	// OutcomeRefused: the event failed payrecon.ParseEvent; it is skipped
	// (a webhook would be answered 400) and logged.
	OutcomeRefused = "refused"
)

// Catcher catches up one job's events.
type Catcher struct {
	source  payrecon.EventSource
	proc    payrecon.EventProcessor
	store   payrecon.EventCursorStore
	cfg     Config
	metrics *metrics
	// fence is the epoch of the lease held now (0: none).
	fence atomic.Int64
}

// New returns a catcher that lists events from source, processes them with
// proc (the webhook endpoint's processor) and keeps its cursor in store,
// or an error when cfg is invalid (Config.Validate).
func New(source payrecon.EventSource, proc payrecon.EventProcessor, store payrecon.EventCursorStore, cfg Config) (*Catcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new catch-up %s: %w", cmp.Or(cfg.Job, JobDefault), err)
	}
	cfg = cfg.withDefaults()
	return &Catcher{source: source, proc: proc, store: store, cfg: cfg, metrics: newMetrics(cfg.Registerer)}, nil
}

// Config returns the effective configuration.
func (c *Catcher) Config() Config { return c.cfg }

// RunOnce holds the job's lease (with a LeaseFunc) and runs one round: it is
// `payrecon events --once`.
func (c *Catcher) RunOnce(ctx context.Context) (rep Report, err error) {
	rep = Report{Job: c.cfg.Job, Outcomes: map[string]int{}}
	err = leased.Hold(ctx, c.leaseConfig(), c.cfg.WaitForLease, func(ctx context.Context, _ payrecon.Lease) error {
		rep, err = c.Round(ctx)
		return err
	})
	return rep, err
}

// leaseConfig is the catch-up's leased loop (Run, RunOnce): the same one
// the sweep runs in.
func (c *Catcher) leaseConfig() leased.Config {
	return leased.Config{
		Job: c.cfg.Job, What: "events", LeaseFunc: c.cfg.LeaseFunc,
		Fatal:      func(err error) bool { return errors.Is(err, payrecon.ErrConfig) },
		RetryPause: c.cfg.RetryPause, RetryPauseMax: c.cfg.RetryPauseMax,
		OnLease: func(epoch int64) {
			c.fence.Store(epoch)
			if epoch != 0 {
				c.metrics.leased.Set(1)
			} else {
				c.metrics.leased.Set(0)
			}
		},
		Clock: c.cfg.Clock, Sleep: c.cfg.SleepFunc, Logger: c.cfg.Logger,
	}
}

// Run catches up every Config.Interval until ctx ends (then it returns
// nil). With a LeaseFunc it first waits for the job's lease, so of several
// replicas exactly one catches up, and another takes over when it dies; it
// watches the lease while it waits between rounds, and when the lease is
// lost it waits for it again. A configuration error (a key without Events:
// Read) is returned; any other failure (Stripe or the database
// unavailable) is logged and the next round tries again.
func (c *Catcher) Run(ctx context.Context) error {
	return leased.Run(ctx, c.leaseConfig(), c.runLeased)
}

func (c *Catcher) runLeased(ctx context.Context, lease payrecon.Lease) error {
	if lease != nil {
		c.cfg.Logger.Info("events lease acquired", "job", c.cfg.Job, "interval", c.cfg.Interval, "epoch", lease.Epoch())
	}
	for {
		if err := leased.Alive(ctx, lease); err != nil {
			return err
		}
		rep, err := c.Round(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, payrecon.ErrConfig):
			return fmt.Errorf("events catch-up: %w", err)
		case errors.Is(err, payrecon.ErrLeaseLost):
			return err
		case err != nil:
			c.cfg.Logger.Warn("events catch-up round failed; trying again next round", "job", c.cfg.Job,
				"processed", rep.Processed, "error", err, "next_in", c.cfg.Interval)
		case rep.Processed > 0:
			c.cfg.Logger.Info("events caught up", "job", c.cfg.Job, "processed", rep.Processed,
				"applied", rep.Outcomes[string(payrecon.Applied)], "duplicates", rep.Outcomes[OutcomeDuplicate],
				"max_delay", rep.MaxDelay.Round(time.Millisecond), "stripe_requests", rep.Requests)
		}
		if err := leased.Wait(ctx, lease, c.cfg.Interval, c.cfg.Clock, c.cfg.SleepFunc); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
