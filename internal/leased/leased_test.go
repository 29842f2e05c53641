package leased_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/leased"
	"github.com/payrecon/payrecon/internal/testkit"
)

// fakeLease is lost when lost is set.
type fakeLease struct {
	epoch    int64
	lost     atomic.Bool
	released atomic.Bool
}

func (l *fakeLease) Alive(context.Context) error {
	if l.lost.Load() {
		return errors.New("taken over")
	}
	return nil
}
func (l *fakeLease) Epoch() int64                        { return l.epoch }
func (l *fakeLease) Release(context.Context) error       { l.released.Store(true); return nil }
func noSleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// A lease lost while the body waits is noticed at once (Wait checks it),
// released, and taken again; the fence follows every lease; a failure is
// retried with backoff; a fatal one ends Run.
func TestRunRetakesALostLeaseAndStopsOnAFatalError(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		leases []*fakeLease
		fences []int64
	)
	fatal := errors.New("fatal")
	takes := 0
	cfg := leased.Config{
		Job: "j", What: "test", Clock: testkit.NewClock(time.Unix(0, 0)), Sleep: noSleep,
		LeaseFunc: func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
			mu.Lock()
			defer mu.Unlock()
			takes++
			if takes == 2 { // the database refused once
				return nil, errors.New("connection refused")
			}
			l := &fakeLease{epoch: int64(len(leases) + 1)}
			leases = append(leases, l)
			return l, nil
		},
		Fatal:   func(err error) bool { return errors.Is(err, fatal) },
		OnLease: func(e int64) { mu.Lock(); fences = append(fences, e); mu.Unlock() },
	}
	clock := testkit.NewClock(time.Unix(0, 0))
	cfg.Clock = clock
	cfg.Sleep = func(ctx context.Context, d time.Duration) error { clock.Advance(d); return ctx.Err() }
	rounds := 0
	err := leased.Run(context.Background(), cfg, func(ctx context.Context, l payrecon.Lease) error {
		rounds++
		if rounds == 1 {
			l.(*fakeLease).lost.Store(true)
			return leased.Wait(ctx, l, time.Hour, cfg.Clock, cfg.Sleep)
		}
		return fatal
	})
	if !errors.Is(err, fatal) {
		t.Fatalf("Run = %v, want the fatal error", err)
	}
	if len(leases) != 2 || !leases[0].released.Load() || !leases[1].released.Load() {
		t.Fatalf("%d leases taken (released %v), want 2, both released", len(leases), leases)
	}
	if want := []int64{1, 0, 2, 0}; len(fences) != 4 || fences[0] != 1 || fences[1] != 0 || fences[2] != 2 || fences[3] != 0 {
		t.Errorf("fences %v, want %v", fences, want)
	}
	if now := clock.Now(); now.After(time.Unix(0, 0).Add(10 * time.Second)) {
		t.Errorf("the lost lease was noticed only at %s: Wait must check every second", now)
	}
}

// Hold without waiting fails with the LeaseFunc's error (the lease held
// elsewhere), and runs the body with a nil lease without a LeaseFunc.
func TestHold(t *testing.T) {
	t.Parallel()
	held := errors.New("held")
	err := leased.Hold(context.Background(), leased.Config{Job: "j", LeaseFunc: func(context.Context, string, bool) (payrecon.Lease, error) {
		return nil, held
	}}, false, func(context.Context, payrecon.Lease) error { t.Fatal("body ran"); return nil })
	if !errors.Is(err, held) {
		t.Fatalf("Hold = %v", err)
	}
	ran := false
	if err := leased.Hold(context.Background(), leased.Config{}, false, func(_ context.Context, l payrecon.Lease) error {
		ran = l == nil
		return nil
	}); err != nil || !ran {
		t.Fatalf("Hold without a LeaseFunc: %v, ran with nil %v", err, ran)
	}
}
