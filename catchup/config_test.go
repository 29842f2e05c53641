package catchup_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
)

// plain is the part of a catcher's effective configuration that is plain
// values (the dependencies New fills in are functions and interfaces).
func plain(c catchup.Config) catchup.Config {
	c.Clock, c.Logger, c.SleepFunc = nil, nil, nil
	return c
}

// A literal's zero fields and DefaultConfig's values configure the same
// catcher: code written before DefaultConfig keeps its meaning.
func TestDefaultConfigIsWhatZeroFieldsMean(t *testing.T) {
	t.Parallel()
	fromZero := plain(mustNew(nil, nil, nil, catchup.Config{}).Config())
	fromDefault := plain(mustNew(nil, nil, nil, catchup.DefaultConfig()).Config())
	if !reflect.DeepEqual(fromZero, fromDefault) {
		t.Fatalf("zero literal: %+v\nDefaultConfig: %+v", fromZero, fromDefault)
	}
	if d := catchup.DefaultConfig(); d.Job != catchup.JobDefault || d.Interval != catchup.IntervalDefault ||
		d.Since != catchup.SinceDefault || d.Overlap != catchup.OverlapDefault || !reflect.DeepEqual(d.Types, payrecon.CatchUpEventTypes) {
		t.Fatalf("DefaultConfig: %+v", d)
	}
}

// mustNew is catchup.New for a configuration the test knows is valid: an
// error there is the test's own mistake, so it stops the test binary.
func mustNew(source payrecon.EventSource, proc payrecon.EventProcessor, store payrecon.EventCursorStore, cfg catchup.Config) *catchup.Catcher {
	c, err := catchup.New(source, proc, store, cfg)
	if err != nil {
		panic(err)
	}
	return c
}

// New refuses a configuration a person must fix, naming the field and
// the job.
func TestNewRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		edit func(*catchup.Config)
		want string
	}{
		"negative interval":  {func(c *catchup.Config) { c.Interval = -time.Second }, "interval must not be negative"},
		"negative since":     {func(c *catchup.Config) { c.Since = -time.Hour }, "since must not be negative"},
		"negative overlap":   {func(c *catchup.Config) { c.Overlap = -time.Minute }, "overlap must not be negative"},
		"retry max below":    {func(c *catchup.Config) { c.RetryPause, c.RetryPauseMax = time.Minute, time.Second }, "below the first pause"},
		"empty event type":   {func(c *catchup.Config) { c.Types = []string{"charge.refunded", " "} }, "event type is empty"},
		"negative retry max": {func(c *catchup.Config) { c.RetryPauseMax = -time.Second }, "retry pause maximum must not be negative"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := catchup.DefaultConfig()
			cfg.Job = "bad-events"
			tc.edit(&cfg)
			c, err := catchup.New(nil, nil, nil, cfg)
			if err == nil || c != nil {
				t.Fatalf("New accepted %+v", cfg)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad-events") {
				t.Fatalf("error %q: want it to contain %q and the job", err, tc.want)
			}
		})
	}
	for _, cfg := range []catchup.Config{{}, catchup.DefaultConfig()} {
		if _, err := catchup.New(nil, nil, nil, cfg); err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
	}
}
