package sweep_test

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/sweep"
)

// effective is the part of a sweeper's effective configuration that is
// plain values (the dependencies New fills in are functions and
// interfaces).
func effective(c sweep.Config) sweep.Config {
	c.Clock, c.Logger, c.SleepFunc = nil, nil, nil
	return c
}

// A literal's zero fields and DefaultConfig's values configure the same
// sweeper: code written before DefaultConfig keeps its meaning.
func TestDefaultConfigIsWhatZeroFieldsMean(t *testing.T) {
	t.Parallel()
	fromZero := effective(mustNew(nil, nil, sweep.Config{}).Config())
	fromDefault := effective(mustNew(nil, nil, sweep.DefaultConfig()).Config())
	if !reflect.DeepEqual(fromZero, fromDefault) {
		t.Fatalf("zero literal: %+v\nDefaultConfig: %+v", fromZero, fromDefault)
	}
	if d := sweep.DefaultConfig(); d.Batch != 200 || d.Grace != 10*time.Minute || d.MinCycle != time.Minute ||
		d.VerifiedRefresh != sweep.DefaultVerifiedRefresh || d.Mode != sweep.ModeAuto || d.Job != sweep.DefaultJob {
		t.Fatalf("DefaultConfig: %+v", d)
	}
	if got := fromDefault.RecheckBatch; got != 50 {
		t.Fatalf("RecheckBatch from Batch 200: got %d, want 50", got)
	}
}

// Off turns the features that can be off off, and stays off through New
// (it is never mistaken for "take the default").
func TestOffTurnsFeaturesOff(t *testing.T) {
	t.Parallel()
	cfg := sweep.DefaultConfig()
	cfg.Grace, cfg.RecheckWait, cfg.MinCycle, cfg.VerifiedRefresh = sweep.Off, sweep.Off, sweep.Off, sweep.Off
	got := mustNew(nil, nil, cfg).Config()
	if got.Grace > 0 || got.RecheckWait != 0 || got.MinCycle != 0 || got.VerifiedRefresh != 0 {
		t.Fatalf("Off fields: Grace %s, RecheckWait %s, MinCycle %s, VerifiedRefresh %s; want none positive",
			got.Grace, got.RecheckWait, got.MinCycle, got.VerifiedRefresh)
	}
}

// mustNew is sweep.New for a configuration the test knows is valid: an
// error there is the test's own mistake, so it stops the test binary.
func mustNew(store payrecon.SweepStore, gw payrecon.Gateway, cfg sweep.Config) *sweep.Sweeper {
	s, err := sweep.New(store, gw, cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// New refuses a configuration a person must fix, naming the field and
// the job.
func TestNewRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit func(*sweep.Config)
		want string
	}{
		"negative batch":         {func(c *sweep.Config) { c.Batch = -1 }, "batch must be positive"},
		"batch too large":        {func(c *sweep.Config) { c.Batch = 10001 }, "too large"},
		"unknown mode":           {func(c *sweep.Config) { c.Mode = "scan" }, `mode "scan"`},
		"negative concurrency":   {func(c *sweep.Config) { c.Concurrency = -2 }, "concurrency must be positive"},
		"negative recheck":       {func(c *sweep.Config) { c.RecheckBatch = -1 }, "recheck batch"},
		"ratio above one":        {func(c *sweep.Config) { c.SystemicFailureRatio = 1.5 }, "between 0 and 1"},
		"ratio NaN":              {func(c *sweep.Config) { c.SystemicFailureRatio = math.NaN() }, "between 0 and 1"},
		"negative max outage":    {func(c *sweep.Config) { c.MaxOutage = -time.Second }, "max outage must not be negative"},
		"negative list skew":     {func(c *sweep.Config) { c.ListSkew = sweep.Off }, "list skew must not be negative"},
		"backoff max below":      {func(c *sweep.Config) { c.RecheckBackoff, c.RecheckBackoffMax = time.Minute, time.Second }, "below the first backoff"},
		"outage pause max below": {func(c *sweep.Config) { c.OutagePause, c.OutagePauseMax = time.Minute, time.Second }, "below the first pause"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := sweep.DefaultConfig()
			cfg.Job = "bad-config"
			tc.edit(&cfg)
			s, err := sweep.New(nil, nil, cfg)
			if err == nil || s != nil {
				t.Fatalf("New accepted %+v", cfg)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad-config") {
				t.Fatalf("error %q: want it to contain %q and the job", err, tc.want)
			}
		})
	}
	// The zero value, DefaultConfig and Off where it has a meaning are valid.
	off := sweep.DefaultConfig()
	off.Grace, off.RecheckWait, off.MinCycle, off.VerifiedRefresh = sweep.Off, sweep.Off, sweep.Off, sweep.Off
	for _, cfg := range []sweep.Config{{}, sweep.DefaultConfig(), off} {
		if _, err := sweep.New(nil, nil, cfg); err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
	}
}
