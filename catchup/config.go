package catchup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
)

// Config configures a catcher and gives it its dependencies. Start from
// DefaultConfig, edit it and pass it to New; a field left zero (in a
// literal that does not come from DefaultConfig) takes DefaultConfig's
// value.
type Config struct {
	// Job names the cursor and the lease (default JobDefault). It must
	// differ from every sweep job's name: the lease keys share one space.
	Job string
	// Interval is the time between rounds of Run (default IntervalDefault).
	Interval time.Duration
	// Since is how far back the first round reaches (default SinceDefault);
	// at most Stripe's 30 days (less an hour) are used.
	Since time.Duration
	// Types are the event types listed (default
	// payrecon.CatchUpEventTypes).
	Types []string
	// Overlap is how far behind the cursor's event every round lists again
	// (default OverlapDefault): an event Stripe lists only after newer ones
	// were read is caught up when it appears, if it appears within this.
	Overlap time.Duration

	// Limiter is the shared Stripe rate budget (the sweep's); nil means
	// unlimited.
	Limiter *budget.Limiter
	// Clock gives every time written and measured; nil means
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives progress and warnings; nil discards them.
	Logger *slog.Logger
	// LeaseFunc, when set, makes RunOnce and Run hold the job's lease.
	LeaseFunc payrecon.LeaseFunc
	// WaitForLease makes RunOnce wait for another holder of the lease
	// instead of failing with payrecon.ErrLeaseHeld.
	WaitForLease bool
	// SleepFunc waits between rounds; nil means payrecon.Sleep.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// RetryPause is Run's first pause after a failure it retries (the
	// lease unobtainable), doubling up to RetryPauseMax; zero means
	// leased's defaults (1 s, 30 s).
	RetryPause, RetryPauseMax time.Duration
	// Registerer receives the catch-up's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults: the configuration to start from.
// RetryPause and RetryPauseMax are left zero (leased's defaults); the
// dependencies (Limiter, Clock, Logger, …) are left nil.
func DefaultConfig() Config {
	return Config{
		Job:      JobDefault,
		Interval: IntervalDefault,
		Since:    SinceDefault,
		Types:    payrecon.CatchUpEventTypes,
		Overlap:  OverlapDefault,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Job == "" {
		c.Job = d.Job
	}
	if c.Interval <= 0 {
		c.Interval = d.Interval
	}
	if c.Since <= 0 {
		c.Since = d.Since
	}
	c.Since = min(c.Since, MaxSince)
	if len(c.Types) == 0 {
		c.Types = d.Types
	}
	if c.Overlap <= 0 {
		c.Overlap = d.Overlap
	}
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SleepFunc == nil {
		c.SleepFunc = payrecon.Sleep
	}
	return c
}

// Validate reports configuration a person must fix (New refuses it): zero
// fields are valid (they take the defaults), negative durations are not.
func (c Config) Validate() error {
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"interval", c.Interval}, {"since", c.Since}, {"overlap", c.Overlap},
		{"retry pause", c.RetryPause}, {"retry pause maximum", c.RetryPauseMax},
	} {
		if d.d < 0 {
			return fmt.Errorf("%s must not be negative, got %s", d.name, d.d)
		}
	}
	if c.RetryPause > 0 && c.RetryPauseMax > 0 && c.RetryPauseMax < c.RetryPause {
		return fmt.Errorf("retry pause maximum %s is below the first pause %s", c.RetryPauseMax, c.RetryPause)
	}
	for _, t := range c.Types {
		if strings.TrimSpace(t) == "" {
			return errors.New("an event type is empty")
		}
	}
	return nil
}

// MaxSince is the furthest back a first round reaches: Stripe's 30 days,
// less a margin of an hour.
const MaxSince = payrecon.EventRetention - retentionMargin
