package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/sweep"
)

// The builders the service and the one-shot commands share give each job
// the process's parts, and refuse an invalid configuration.
func TestBuildersApplyParts(t *testing.T) {
	t.Parallel()
	lim := budget.NewLimiter(5)
	leased := false
	parts := service.Parts{Limiter: lim, LeaseFunc: func(context.Context, string, bool) (payrecon.Lease, error) {
		leased = true
		return nil, payrecon.ErrLeaseHeld
	}}

	cfg := sweep.DefaultConfig()
	cfg.Job = "built"
	s, err := service.NewSweeper(nil, nil, cfg, parts)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Config()
	if got.Job != "built" || got.Limiter != lim || got.LeaseFunc == nil || got.Logger == nil {
		t.Fatalf("sweeper's configuration: job %q, limiter %p (want %p), lease set %v", got.Job, got.Limiter, lim, got.LeaseFunc != nil)
	}
	if _, err := got.LeaseFunc(context.Background(), "built", false); err == nil || !leased {
		t.Fatalf("the sweeper's lease is not the parts' (err %v)", err)
	}
	cfg.Batch = -1
	if _, err := service.NewSweeper(nil, nil, cfg, parts); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Fatalf("NewSweeper with a negative batch: %v", err)
	}

	ec := catchup.DefaultConfig()
	c, err := service.NewCatcher(nil, nil, nil, ec, parts)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Config(); got.Limiter != lim || got.LeaseFunc == nil || got.Job != catchup.JobDefault {
		t.Fatalf("catcher's configuration: job %q, limiter %p (want %p)", got.Job, got.Limiter, lim)
	}
	ec.Overlap = -1
	if _, err := service.NewCatcher(nil, nil, nil, ec, parts); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("NewCatcher with a negative overlap: %v", err)
	}
}

// service.New refuses an invalid sweep or catch-up configuration before
// it builds anything (so before it touches the database).
func TestNewRefusesInvalidJobConfig(t *testing.T) {
	t.Parallel()
	badSweep := sweep.DefaultConfig()
	badSweep.Batch = -1
	if _, err := service.New(nil, service.Config{Sweep: badSweep}); err == nil || !strings.Contains(err.Error(), "the sweep: batch must be positive") {
		t.Fatalf("New with a negative batch: %v", err)
	}
	badEvents := catchup.DefaultConfig()
	badEvents.Since = -1
	if _, err := service.New(nil, service.Config{Sweep: sweep.DefaultConfig(), Events: badEvents}); err == nil ||
		!strings.Contains(err.Error(), "the events catch-up: since must not be negative") {
		t.Fatalf("New with a negative since: %v", err)
	}
}
