package sweep_test

import (
	"reflect"
	"testing"
	"time"

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
	fromZero := effective(sweep.New(nil, nil, sweep.Config{}).Config())
	fromDefault := effective(sweep.New(nil, nil, sweep.DefaultConfig()).Config())
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
	got := sweep.New(nil, nil, cfg).Config()
	if got.Grace > 0 || got.RecheckWait != 0 || got.MinCycle != 0 || got.VerifiedRefresh != 0 {
		t.Fatalf("Off fields: Grace %s, RecheckWait %s, MinCycle %s, VerifiedRefresh %s; want none positive",
			got.Grace, got.RecheckWait, got.MinCycle, got.VerifiedRefresh)
	}
}
