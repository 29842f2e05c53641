package console

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"payrecon"
)

// SampleStore keeps the history the overview's charts draw.
// postgres.ConsoleReader implements it.
type SampleStore interface {
	// RecordSample stores the figures of minute (lag, open findings, …) if
	// no replica did yet, and reports whether this call stored them.
	RecordSample(ctx context.Context, minute, now time.Time) (bool, error)
	// PruneSamples deletes up to limit samples older than before and
	// returns how many it deleted.
	PruneSamples(ctx context.Context, before time.Time, limit int) (int64, error)
}

// Defaults of Sampler.
const (
	// SampleRetentionDefault keeps a day more than the charts show.
	SampleRetentionDefault = 8 * 24 * time.Hour
	// PruneBatchDefault bounds one DELETE.
	PruneBatchDefault = 1000
)

// Sampler records one sample a minute and prunes old ones. Several
// replicas may run one: the minute is the sample's key, so the first to
// write it wins and the others change nothing.
type Sampler struct {
	Store  SampleStore
	Clock  payrecon.Clock
	Logger *slog.Logger
	// Retention is how long samples are kept (default
	// SampleRetentionDefault); PruneBatch bounds each delete (default
	// PruneBatchDefault).
	Retention  time.Duration
	PruneBatch int
}

func (s *Sampler) defaults() {
	if s.Clock == nil {
		s.Clock = payrecon.SystemClock{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Retention <= 0 {
		s.Retention = SampleRetentionDefault
	}
	if s.PruneBatch <= 0 {
		s.PruneBatch = PruneBatchDefault
	}
}

// Tick records the current minute's sample and prunes samples past the
// retention, in batches of PruneBatch until none is left.
func (s *Sampler) Tick(ctx context.Context) error {
	s.defaults()
	now := s.Clock.Now()
	minute := now.Truncate(time.Minute)
	if _, err := s.Store.RecordSample(ctx, minute, now); err != nil {
		return fmt.Errorf("record the console sample of %s: %w", minute.UTC().Format(time.RFC3339), err)
	}
	before := minute.Add(-s.Retention)
	for {
		n, err := s.Store.PruneSamples(ctx, before, s.PruneBatch)
		if err != nil {
			return fmt.Errorf("prune console samples before %s: %w", before.UTC().Format(time.RFC3339), err)
		}
		if n < int64(s.PruneBatch) {
			return nil
		}
	}
}

// Run ticks at the start of every minute until ctx ends (then it returns
// nil). A failed tick is logged and the next minute tried again: the charts
// lose a point, nothing else.
func (s *Sampler) Run(ctx context.Context) error {
	s.defaults()
	for {
		if err := s.Tick(ctx); err != nil && ctx.Err() == nil {
			s.Logger.Warn("console sampler", "error", err)
		}
		now := s.Clock.Now()
		next := now.Truncate(time.Minute).Add(time.Minute)
		if err := payrecon.Sleep(ctx, next.Sub(now)); err != nil {
			return nil
		}
	}
}
