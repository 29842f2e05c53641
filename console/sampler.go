package console

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/payrecon/payrecon"
)

// SampleStore keeps the history the overview's charts draw.
// postgres.ConsoleReader implements it.
type SampleStore interface {
	// RecordSample stores the figures of minute (lag, open findings, …) if
	// no replica did yet, and reports whether this call stored them.
	RecordSample(ctx context.Context, minute, now time.Time) (bool, error)
}

// Sampler records one sample a minute. Several replicas may run one: the
// minute is the sample's key, so the first to write it wins and the others
// change nothing. Old samples are pruned by age with the rest of the
// history (postgres.PruneTargets: `--retain-console-samples`, by the
// service's periodic prune and `payrecon prune --once`).
type Sampler struct {
	Store  SampleStore
	Clock  payrecon.Clock
	Logger *slog.Logger
}

func (s *Sampler) defaults() {
	if s.Clock == nil {
		s.Clock = payrecon.SystemClock{}
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
}

// Tick records the current minute's sample.
func (s *Sampler) Tick(ctx context.Context) error {
	s.defaults()
	now := s.Clock.Now()
	minute := now.Truncate(time.Minute)
	if _, err := s.Store.RecordSample(ctx, minute, now); err != nil {
		return fmt.Errorf("record the console sample of %s: %w", minute.UTC().Format(time.RFC3339), err)
	}
	return nil
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
