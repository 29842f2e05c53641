// Package leased is the one loop every long-running job of payrecon runs
// in (the sweep, its recent window, the events catch-up): take the job's
// lease, give the body its epoch as the fence, run the body until the
// lease is lost or the context ends, release the lease; retry a failure
// with backoff; stop on a failure a person must fix. Written once, so the
// copies cannot drift apart (the catch-up's once had a hard-coded backoff
// and did not watch its lease while it slept).
package leased

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/payrecon/payrecon"
)

// Defaults of Config.
const (
	RetryPauseDefault    = time.Second
	RetryPauseMaxDefault = 30 * time.Second
	// aliveEvery is how often Wait checks the lease while the body waits.
	aliveEvery = time.Second
)

// ErrLost: the body noticed the lease was lost (Alive failed); Run takes
// it again.
var ErrLost = errors.New("lease lost")

// Config configures a leased loop.
type Config struct {
	// Job names the lease; What names the job in logs ("sweep", "events
	// catch-up").
	Job, What string
	// LeaseFunc takes the lease (waiting); nil runs the body without one.
	LeaseFunc payrecon.LeaseFunc
	// Fatal reports the errors that end Run (a configuration error, an
	// outage longer than the job's patience); every other error is
	// retried.
	Fatal func(error) bool
	// RetryPause is the first pause after a failure, doubling up to
	// RetryPauseMax; it starts again once the body had run for four times
	// RetryPauseMax.
	RetryPause, RetryPauseMax time.Duration
	// OnLease is told the epoch of each lease taken (the fence), and 0
	// when it is given up.
	OnLease func(epoch int64)
	// OnRetry is told of each retried failure (a metric).
	OnRetry func()
	Clock   payrecon.Clock
	Sleep   func(ctx context.Context, d time.Duration) error
	Logger  *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.What == "" {
		c.What = "job"
	}
	if c.Fatal == nil {
		c.Fatal = func(err error) bool { return errors.Is(err, payrecon.ErrConfig) }
	}
	if c.RetryPause <= 0 {
		c.RetryPause = RetryPauseDefault
	}
	if c.RetryPauseMax <= 0 {
		c.RetryPauseMax = RetryPauseMaxDefault
	}
	c.RetryPauseMax = max(c.RetryPauseMax, c.RetryPause)
	if c.OnLease == nil {
		c.OnLease = func(int64) {}
	}
	if c.OnRetry == nil {
		c.OnRetry = func() {}
	}
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.Sleep == nil {
		c.Sleep = payrecon.Sleep
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run runs body under the job's lease until ctx ends (it returns nil) or
// body fails with an error cfg.Fatal accepts (it returns it). body gets the
// lease (nil without a LeaseFunc) and checks it where it may stop (Alive
// between batches; Wait while it waits); when it returns ErrLost, or any
// error matching payrecon.ErrLeaseLost (a commit fenced out), Run takes the
// lease again. Any other failure, a lease that cannot be taken included
// (the database refusing connections), is logged and retried with backoff:
// the process stays up and resumes by itself.
func Run(ctx context.Context, cfg Config, body func(ctx context.Context, lease payrecon.Lease) error) error {
	cfg = cfg.withDefaults()
	pause := cfg.RetryPause
	for {
		began := cfg.Clock.Now()
		err := hold(ctx, cfg, true, body)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrLost) || errors.Is(err, payrecon.ErrLeaseLost) {
			cfg.Logger.Warn(cfg.What+" lease lost; waiting to take it again", "job", cfg.Job, "error", err)
			pause = cfg.RetryPause
			continue
		}
		if err != nil && cfg.Fatal(err) {
			return err
		}
		if cfg.Clock.Now().Sub(began) > 4*cfg.RetryPauseMax {
			pause = cfg.RetryPause // it had been working: start the backoff again
		}
		cfg.OnRetry()
		cfg.Logger.Warn(cfg.What+" interrupted; retrying", "job", cfg.Job, "error", err, "retry_in", pause)
		if err := cfg.Sleep(ctx, pause); err != nil {
			return nil
		}
		pause = min(pause*2, cfg.RetryPauseMax)
	}
}

// Hold runs body once under the job's lease: it takes it (waiting for
// another holder when wait, else failing with an error matching
// payrecon.ErrLeaseHeld), gives OnLease its epoch, and releases it when
// body returns. Without a LeaseFunc it runs body with a nil lease. It is
// `scan --once` and `events --once`; Run is the same with retries.
func Hold(ctx context.Context, cfg Config, wait bool, body func(ctx context.Context, lease payrecon.Lease) error) error {
	return hold(ctx, cfg.withDefaults(), wait, body)
}

// hold takes the lease, runs body under it and releases it.
func hold(ctx context.Context, cfg Config, wait bool, body func(context.Context, payrecon.Lease) error) error {
	if cfg.LeaseFunc == nil {
		return body(ctx, nil)
	}
	if wait {
		cfg.Logger.Info("waiting for the "+cfg.What+" lease", "job", cfg.Job)
	}
	lease, err := cfg.LeaseFunc(ctx, cfg.Job, wait)
	if err != nil {
		return err
	}
	defer lease.Release(context.WithoutCancel(ctx)) //nolint:errcheck // the lock dies with the session anyway
	cfg.OnLease(lease.Epoch())
	defer cfg.OnLease(0)
	cfg.Logger.Info(cfg.What+" lease acquired", "job", cfg.Job, "epoch", lease.Epoch())
	return body(ctx, lease)
}

// Alive is lease.Alive as the loop's body checks it: nil without a lease,
// ErrLost (wrapping the cause) once it is lost.
func Alive(ctx context.Context, lease payrecon.Lease) error {
	if lease == nil {
		return nil
	}
	if err := lease.Alive(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	return nil
}

// Wait sleeps d (through sleep, on clock) while watching the lease every
// second: it returns ErrLost as soon as the lease is lost, ctx's error
// when ctx ends, nil after d.
func Wait(ctx context.Context, lease payrecon.Lease, d time.Duration, clock payrecon.Clock, sleep func(context.Context, time.Duration) error) error {
	end := clock.Now().Add(d)
	for {
		if err := Alive(ctx, lease); err != nil {
			return err
		}
		left := end.Sub(clock.Now())
		if left <= 0 {
			return nil
		}
		if lease != nil {
			left = min(left, aliveEvery)
		}
		if err := sleep(ctx, left); err != nil {
			return err
		}
	}
}
