package catchup_test

import (
	"reflect"
	"testing"

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
	fromZero := plain(catchup.New(nil, nil, nil, catchup.Config{}).Config())
	fromDefault := plain(catchup.New(nil, nil, nil, catchup.DefaultConfig()).Config())
	if !reflect.DeepEqual(fromZero, fromDefault) {
		t.Fatalf("zero literal: %+v\nDefaultConfig: %+v", fromZero, fromDefault)
	}
	if d := catchup.DefaultConfig(); d.Job != catchup.JobDefault || d.Interval != catchup.IntervalDefault ||
		d.Since != catchup.SinceDefault || d.Overlap != catchup.OverlapDefault || !reflect.DeepEqual(d.Types, payrecon.CatchUpEventTypes) {
		t.Fatalf("DefaultConfig: %+v", d)
	}
}
