package sweep

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
)

// Config tunes a sweeper and gives it its dependencies. Start from
// DefaultConfig, edit it and pass it to New. Where "off" has a meaning
// (Grace, RecheckWait, MinCycle, VerifiedRefresh) it is the value Off. A
// field left zero (in a literal that does not come from DefaultConfig)
// takes DefaultConfig's value, so a literal keeps the meaning it always
// had.
type Config struct {
	// Job names the cursor (and the lease).
	Job string
	// Batch is the number of cursor rows per batch.
	Batch int
	// Grace: rows updated more recently than this are in_flight; Off: no
	// window.
	Grace time.Duration
	// Concurrency bounds the Stripe calls in flight.
	Concurrency int
	// Mode chooses retrieve, list or auto (the default).
	Mode Mode
	// ListSkew widens a batch's creation-time window in list mode, for
	// clock skew between the local created_at and Stripe's created.
	ListSkew time.Duration
	// RecheckBatch bounds the due rechecks added to each batch.
	RecheckBatch int
	// RecheckBackoff is the first delay before an unverifiable row is
	// rechecked; it doubles with each attempt up to RecheckBackoffMax.
	RecheckBackoff    time.Duration
	RecheckBackoffMax time.Duration
	// SystemicFailureRatio: when more than this share of a batch's Stripe
	// calls fail (and at least SystemicMinCalls were made, or the whole batch
	// when smaller), the batch is discarded and the sweep pauses.
	SystemicFailureRatio float64
	SystemicMinCalls     int
	// OutagePause is the first pause after a systemic failure; it doubles up
	// to OutagePauseMax. RunCycle gives up after MaxOutage of consecutive
	// failure.
	OutagePause    time.Duration
	OutagePauseMax time.Duration
	MaxOutage      time.Duration
	// RecheckWait: after the wrap, RunCycle keeps rechecking unverifiable
	// rows as they come due for at most this long (Off: not at all).
	RecheckWait time.Duration
	// MinCycle: the continuous sweep (Run) starts a new cycle no sooner than
	// this after the last one started; it sleeps only when a cycle completes
	// early, rechecking due rows meanwhile (Off: no minimum).
	MinCycle time.Duration
	// StopGrace: when the context of Run or RunCycle ends, the batch in
	// progress gets this long to finish and commit before it is abandoned
	// (and then discarded whole, never half-written).
	StopGrace time.Duration
	// RetryPause is Run's first pause after a failure it retries (the
	// database unavailable, the lease unobtainable); it doubles up to
	// RetryPauseMax.
	RetryPause    time.Duration
	RetryPauseMax time.Duration
	// WaitForLease makes RunCycle wait for another holder of the job's lease
	// instead of failing with payrecon.ErrLeaseHeld.
	WaitForLease bool

	// Limiter is the shared Stripe rate budget; nil means unlimited.
	Limiter *budget.Limiter
	// Clock gives every time the sweep writes and measures; nil means
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives progress and warnings; nil discards them.
	Logger *slog.Logger
	// LeaseFunc, when set, makes RunCycle and Run hold the job's lease.
	LeaseFunc payrecon.LeaseFunc
	// SleepFunc waits (outage pauses, recheck waits, idle time between
	// cycles); nil means payrecon.Sleep. Tests advance a fake clock in it.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// Registerer receives the sweep's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Money says which money checks run beside the status verdict: the
	// local columns payments has (postgres.Store.UseMoneyColumns) and the
	// kinds an operator ignores. The zero value judges the charge (refunds,
	// disputes) but no local amount or currency.
	Money payrecon.MoneyChecks
	// IntentMetadata, when set, makes only listed PaymentIntents carrying
	// every one of these metadata pairs count as payrecon's: others are
	// never missing_locally (--intent-metadata).
	IntentMetadata map[string]string
	// StuckAfter: a row observed continuously in one in-flight status
	// longer than its limit gets a stuck_in_flight finding (--stuck-after);
	// nil or empty: off.
	StuckAfter payrecon.StuckAfter
	// VerifiedRefresh: a verified row whose Stripe status did not change
	// gets its observed_external_status and last_reconciled_at written at
	// most once per VerifiedRefresh, spread over the cycles; its
	// verification is recorded per batch in payrecon's own table
	// (payrecon.BatchCommit.VerifiedRefresh, --verified-refresh). Off
	// writes every verified row.
	VerifiedRefresh time.Duration
}

// Off, as Config.Grace, RecheckWait, MinCycle or VerifiedRefresh, turns
// that feature off: no in-flight window, no recheck wait after the wrap, no
// minimum cycle time, every verified row written. (Any negative duration
// means the same.)
const Off time.Duration = -1

// DefaultConfig returns the defaults (the CLI's flags' defaults): the
// configuration to start from. RecheckBatch is left zero, which New reads
// as a quarter of Batch; the dependencies (Limiter, Clock, Logger, …) are
// left nil.
func DefaultConfig() Config {
	return Config{
		Job:                  DefaultJob,
		Batch:                200,
		Grace:                10 * time.Minute,
		Concurrency:          8,
		Mode:                 ModeAuto,
		ListSkew:             time.Minute,
		RecheckBackoff:       2 * time.Second,
		RecheckBackoffMax:    5 * time.Minute,
		SystemicFailureRatio: 0.5,
		SystemicMinCalls:     10,
		OutagePause:          time.Second,
		OutagePauseMax:       time.Minute,
		MaxOutage:            5 * time.Minute,
		RecheckWait:          time.Minute,
		MinCycle:             time.Minute,
		StopGrace:            20 * time.Second,
		RetryPause:           time.Second,
		RetryPauseMax:        30 * time.Second,
		VerifiedRefresh:      DefaultVerifiedRefresh,
	}
}

// DefaultVerifiedRefresh is --verified-refresh's default.
const DefaultVerifiedRefresh = 24 * time.Hour

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Job == "" {
		c.Job = d.Job
	}
	if c.Batch <= 0 {
		c.Batch = d.Batch
	}
	if c.Grace == 0 {
		c.Grace = d.Grace
	}
	if c.Concurrency <= 0 {
		c.Concurrency = d.Concurrency
	}
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.ListSkew <= 0 {
		c.ListSkew = d.ListSkew
	}
	if c.RecheckBatch <= 0 {
		c.RecheckBatch = max(1, c.Batch/4)
	}
	if c.RecheckBackoff <= 0 {
		c.RecheckBackoff = d.RecheckBackoff
	}
	if c.RecheckBackoffMax <= 0 {
		c.RecheckBackoffMax = d.RecheckBackoffMax
	}
	if c.SystemicFailureRatio <= 0 {
		c.SystemicFailureRatio = d.SystemicFailureRatio
	}
	if c.SystemicMinCalls <= 0 {
		c.SystemicMinCalls = d.SystemicMinCalls
	}
	if c.OutagePause <= 0 {
		c.OutagePause = d.OutagePause
	}
	if c.OutagePauseMax <= 0 {
		c.OutagePauseMax = d.OutagePauseMax
	}
	if c.MaxOutage <= 0 {
		c.MaxOutage = d.MaxOutage
	}
	if c.StopGrace <= 0 {
		c.StopGrace = d.StopGrace
	}
	if c.RetryPause <= 0 {
		c.RetryPause = d.RetryPause
	}
	if c.RetryPauseMax <= 0 {
		c.RetryPauseMax = d.RetryPauseMax
	}
	c.RetryPauseMax = max(c.RetryPauseMax, c.RetryPause)
	if c.MinCycle == 0 {
		c.MinCycle = d.MinCycle
	}
	c.MinCycle = max(c.MinCycle, 0)
	if c.RecheckWait == 0 {
		c.RecheckWait = d.RecheckWait
	}
	if c.VerifiedRefresh == 0 {
		c.VerifiedRefresh = d.VerifiedRefresh
	}
	c.VerifiedRefresh = max(c.VerifiedRefresh, 0)
	c.RecheckWait = max(c.RecheckWait, 0)
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

// Validate reports configuration a person must fix (New refuses it). Zero
// fields are valid (they take the defaults), and so is Off where it has a
// meaning; a negative value where it has none is not.
func (c Config) Validate() error {
	switch {
	case c.Batch < 0:
		return fmt.Errorf("batch must be positive, got %d", c.Batch)
	case c.Batch > 10000:
		return fmt.Errorf("batch %d is too large (at most 10000): a batch is one transaction", c.Batch)
	case c.Mode != "" && c.Mode != ModeRetrieve && c.Mode != ModeList && c.Mode != ModeAuto:
		return fmt.Errorf("mode %q: want retrieve, list or auto", c.Mode)
	case c.Concurrency < 0:
		return fmt.Errorf("concurrency must be positive, got %d", c.Concurrency)
	case c.RecheckBatch < 0:
		return fmt.Errorf("recheck batch must be positive, got %d", c.RecheckBatch)
	case c.SystemicMinCalls < 0:
		return fmt.Errorf("systemic minimum calls must be positive, got %d", c.SystemicMinCalls)
	case !(c.SystemicFailureRatio >= 0 && c.SystemicFailureRatio <= 1): // NaN too
		return fmt.Errorf("systemic failure ratio must be between 0 and 1, got %g", c.SystemicFailureRatio)
	case c.RecheckBackoff > 0 && c.RecheckBackoffMax > 0 && c.RecheckBackoffMax < c.RecheckBackoff:
		return fmt.Errorf("recheck backoff maximum %s is below the first backoff %s", c.RecheckBackoffMax, c.RecheckBackoff)
	case c.OutagePause > 0 && c.OutagePauseMax > 0 && c.OutagePauseMax < c.OutagePause:
		return fmt.Errorf("outage pause maximum %s is below the first pause %s", c.OutagePauseMax, c.OutagePause)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"list skew", c.ListSkew}, {"recheck backoff", c.RecheckBackoff}, {"recheck backoff maximum", c.RecheckBackoffMax},
		{"outage pause", c.OutagePause}, {"outage pause maximum", c.OutagePauseMax}, {"max outage", c.MaxOutage},
		{"stop grace", c.StopGrace}, {"retry pause", c.RetryPause}, {"retry pause maximum", c.RetryPauseMax},
	} {
		if d.d < 0 {
			return fmt.Errorf("%s must not be negative, got %s", d.name, d.d)
		}
	}
	return nil
}
