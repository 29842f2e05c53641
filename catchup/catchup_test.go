package catchup_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

var applied = string(payrecon.Applied)

// The webhook endpoint loses a share of the deliveries: the catch-up
// applies each lost event exactly once, finds the delivered ones already
// processed, and then costs one request a round, plus the pages of its
// overlap when more than a page of events falls in it.
func TestEndpointDownCatchUpAppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	ids := b.payments(t, 150) // more than one page of events
	b.move(t, ids, payrecon.IntentSucceeded)
	delivered := b.deliver(t, 0.4)
	if len(delivered) == 0 || len(delivered) == 150 {
		t.Fatalf("%d of 150 delivered: the scenario needs both lost and delivered events", len(delivered))
	}

	c := b.catcher(catchup.Config{Since: time.Hour})
	rep, err := c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Processed != 150 || rep.Outcomes[applied] != 150-len(delivered) || rep.Outcomes[catchup.OutcomeDuplicate] != len(delivered) || !rep.UpToDate {
		t.Fatalf("round: %+v; want 150 processed, %d applied, %d duplicates, up to date", rep, 150-len(delivered), len(delivered))
	}
	for _, id := range ids {
		if s, v := b.state(t, id); s != payrecon.StatusPaid || v != 1 {
			t.Fatalf("payment %s is %s v%d, want paid v1 (one transition)", id, s, v)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM stripe_webhook_events WHERE outcome = $1", applied); n != 150 {
		t.Fatalf("%d events recorded as applied, want 150", n)
	}

	before := b.listRequests()
	rep, err = c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 150 events in the overlap: the first page says more follow, so the
	// overlap is listed on its own (two pages) and then the walk from the
	// cursor (one).
	if rep.Processed != 0 || rep.Requests != 4 || b.listRequests()-before != 4 {
		t.Fatalf("quiet round: processed %d with %d requests (simulator saw %d), want 0 with 4", rep.Processed, rep.Requests, b.listRequests()-before)
	}
}

// The same events by webhook and by catch-up, at the same time or one after
// the other: one transition each.
func TestWebhookAndCatchUpMakeOneTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	c := b.catcher(catchup.Config{Since: time.Hour})

	// Concurrently.
	ids := b.payments(t, 80)
	b.move(t, ids, payrecon.IntentSucceeded)
	var wg sync.WaitGroup
	var delivered map[string]bool
	wg.Go(func() { delivered = b.deliver(t, 0) })
	rep, err := c.Round(ctx)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if len(delivered) != 80 || rep.Processed != 80 {
		t.Fatalf("%d delivered, %d caught up; want 80 and 80", len(delivered), rep.Processed)
	}
	// Then the webhook after the catch-up: a duplicate.
	late := b.payments(t, 5)
	evs := b.move(t, late, payrecon.IntentSucceeded)
	if rep, err = c.Round(ctx); err != nil || rep.Outcomes[applied] != 5 {
		t.Fatalf("round: %+v, %v; want 5 applied", rep, err)
	}
	for _, ev := range evs {
		if outcome, dup := b.post(t, ev); !dup || outcome != applied {
			t.Fatalf("webhook of %s after the catch-up: outcome %q duplicate %v, want the first outcome (applied) as a duplicate", ev, outcome, dup)
		}
	}
	for _, id := range append(ids, late...) {
		if s, v := b.state(t, id); s != payrecon.StatusPaid || v != 1 {
			t.Fatalf("payment %s is %s v%d, want paid v1", id, s, v)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM stripe_webhook_events WHERE outcome = $1", applied); n != 85 {
		t.Fatalf("%d events applied, want 85", n)
	}
}

// Stripe lists newest first; the catch-up applies oldest first, across
// pages. Each intent failed, then succeeded on a retry: applied in Stripe's
// order the payment is marked failed (the later success is refused by the
// writer and left for review), so a newest-first application (paid) would
// show. And a webhook that delivered the newer event while the older one
// was lost: the catch-up's late older event moves nothing back.
func TestEventsAreAppliedOldestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	ids := b.payments(t, 60)
	for _, id := range ids { // 120 events: two pages
		b.move(t, []string{id}, payrecon.IntentRequiresConfirmation)
		b.move(t, []string{id}, payrecon.IntentRequiresPaymentMethod)
		b.move(t, []string{id}, payrecon.IntentSucceeded)
	}
	rep, err := b.catcher(catchup.Config{Since: time.Hour}).Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[applied] != 60 || rep.Outcomes[string(payrecon.MovedElsewhere)] != 60 {
		t.Fatalf("outcomes %v; want 60 applied (payment_failed) and 60 moved_elsewhere (succeeded after it)", rep.Outcomes)
	}
	for _, id := range ids {
		if s, v := b.state(t, id); s != payrecon.StatusFailed || v != 1 {
			t.Fatalf("payment %s is %s v%d, want failed v1 (events applied in Stripe's order)", id, s, v)
		}
	}

	// Reverse order across the two roads.
	rev := b.payments(t, 3)
	var newer []string
	for _, id := range rev {
		b.move(t, []string{id}, payrecon.IntentRequiresConfirmation)
		b.move(t, []string{id}, payrecon.IntentRequiresPaymentMethod) // the older event: its webhook is lost
		newer = append(newer, b.move(t, []string{id}, payrecon.IntentSucceeded)...)
	}
	for _, ev := range newer {
		if outcome, _ := b.post(t, ev); outcome != applied {
			t.Fatalf("webhook of the newer event %s: %s, want applied", ev, outcome)
		}
	}
	rep, err = b.catcher(catchup.Config{}).Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[string(payrecon.MovedElsewhere)] != 3 || rep.Outcomes[catchup.OutcomeDuplicate] != 3 {
		t.Fatalf("outcomes %v; want the 3 older events moved_elsewhere, the 3 newer duplicates", rep.Outcomes)
	}
	for _, id := range rev {
		if s, v := b.state(t, id); s != payrecon.StatusPaid || v != 1 {
			t.Fatalf("payment %s is %s v%d, want paid v1: a late older event moves nothing back", id, s, v)
		}
	}
}

// The cursor is in the database: a new catcher (a restart) goes on from it.
func TestCursorSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	b.move(t, b.payments(t, 30), payrecon.IntentSucceeded)
	if rep, err := b.catcher(catchup.Config{Since: time.Hour}).Round(ctx); err != nil || rep.Outcomes[applied] != 30 {
		t.Fatalf("first process: %+v, %v", rep, err)
	}
	more := b.payments(t, 12)
	b.move(t, more, payrecon.IntentCanceled)

	// A second process: its own pool, gateway and catcher.
	pool := b.newPool(t)
	restarted := mustNew(b.gw, postgres.NewEvents(pool, postgres.NewWriter(nil), nil), postgres.NewEventCursors(pool), catchup.Config{Since: time.Hour})
	rep, err := restarted.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Processed != 12 || rep.Outcomes[applied] != 12 || rep.Requests != 1 {
		t.Fatalf("after the restart: %+v; want the 12 new events applied with one request, none of the old ones again", rep)
	}
	for _, id := range more {
		if s, v := b.state(t, id); s != payrecon.StatusFailed || v != 1 {
			t.Fatalf("payment %s is %s v%d, want failed v1", id, s, v)
		}
	}
}

// Two catchers on two pools at once, while events keep coming, without the
// lease (so only the cursor's compare-and-set and the dedupe protect):
// every event applied exactly once, none skipped.
func TestTwoCatchersConcurrentlyNeitherSkipNorRepeat(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	ids := b.payments(t, 240)
	type replica struct {
		c    *catchup.Catcher
		reps []catchup.Report
	}
	replicas := make([]*replica, 2)
	for i := range replicas {
		pool := b.newPool(t)
		replicas[i] = &replica{c: mustNew(b.gw, postgres.NewEvents(pool, postgres.NewWriter(nil), nil),
			postgres.NewEventCursors(pool), catchup.Config{Since: time.Hour})}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, r := range replicas {
		wg.Go(func() {
			for {
				select {
				case <-done:
					rep, err := r.c.Round(ctx) // a last round after the producer stopped
					r.reps = append(r.reps, rep)
					if err != nil {
						errs <- err
					}
					return
				default:
				}
				rep, err := r.c.Round(ctx)
				r.reps = append(r.reps, rep)
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := 0; i < len(ids); i += 8 {
		b.move(t, ids[i:i+8], payrecon.IntentSucceeded)
		time.Sleep(2 * time.Millisecond) // let rounds interleave with new events
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A final round from either sees the newest event: nothing was skipped.
	rep, err := replicas[0].c.Round(ctx)
	if err != nil || rep.Processed != 0 {
		t.Fatalf("final round: %+v, %v; want nothing left", rep, err)
	}
	total := 0
	for _, r := range replicas {
		for _, rep := range r.reps {
			total += rep.Outcomes[applied]
		}
	}
	if total != 240 {
		t.Fatalf("the two catchers applied %d events, want 240 (each exactly once)", total)
	}
	if n := b.count(t, "SELECT count(*) FROM stripe_webhook_events WHERE outcome = $1", applied); n != 240 {
		t.Fatalf("%d events recorded applied, want 240", n)
	}
	// The cursor's outcomes count each applied event once, whichever
	// catcher won the race to move the cursor past it (issue 23, defect 8).
	if n := b.count(t, "SELECT coalesce((outcomes->>$1)::int, 0) FROM stripe_events_cursor", applied); n != 240 {
		t.Fatalf("the cursor counts %d events applied, want 240", n)
	}
	for _, id := range ids {
		if s, v := b.state(t, id); s != payrecon.StatusPaid || v != 1 {
			t.Fatalf("payment %s is %s v%d, want paid v1", id, s, v)
		}
	}
}

// With the lease, two running catchers: only one catches up at a time.
func TestTwoRunningCatchersOneHoldsTheLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ids := b.payments(t, 40)
	ctx, cancel := context.WithCancel(context.Background())
	regs := make([]*prometheus.Registry, 2)
	var wg sync.WaitGroup
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
		pool := b.newPool(t)
		c := mustNew(b.gw, postgres.NewEvents(pool, postgres.NewWriter(nil), nil), postgres.NewEventCursors(pool), catchup.Config{
			Since: time.Hour, Interval: 20 * time.Millisecond, Registerer: regs[i],
			LeaseFunc: func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
				return postgres.AcquireLease(ctx, pool, job, wait)
			},
		})
		wg.Go(func() {
			if err := c.Run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	b.move(t, ids, payrecon.IntentSucceeded)
	testkit.WaitFor(t, "every event applied and passed by the cursor", 30*time.Second, func() bool {
		return b.count(t, "SELECT coalesce((SELECT (outcomes->>'applied')::int FROM stripe_events_cursor), 0)") == 40
	})
	held := []float64{gauge(t, regs[0], "payrecon_events_lease_held"), gauge(t, regs[1], "payrecon_events_lease_held")}
	cancel()
	wg.Wait() // the counters are final once both have stopped
	if held[0]+held[1] != 1 {
		t.Fatalf("lease held by %v, want exactly one catcher", held)
	}
	for i, reg := range regs {
		n := counter(t, reg, "payrecon_events_applied_total", applied)
		if (held[i] == 1) != (n == 40) || (held[i] == 0 && n != 0) {
			t.Fatalf("catcher %d (lease %v) applied %v events; the holder must apply all 40, the other none", i, held[i], n)
		}
	}
}

// The cursor older than Stripe's 30 days: the catch-up says so, restarts
// from the 30-day bound, and leaves the lost events to the sweep.
func TestCursorOlderThan30DaysRestartsFromTheBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(t0)
	b := setup(t, clock)
	reg := prometheus.NewRegistry()
	c := b.catcher(catchup.Config{Since: time.Hour, Registerer: reg})
	ids := b.payments(t, 3)
	b.move(t, ids[:1], payrecon.IntentSucceeded)
	if rep, err := c.Round(ctx); err != nil || rep.Outcomes[applied] != 1 {
		t.Fatalf("first round: %+v, %v", rep, err)
	}
	clock.Advance(time.Hour)
	b.move(t, ids[1:2], payrecon.IntentSucceeded) // lost: no round for 31 days
	clock.Advance(31 * 24 * time.Hour)
	b.move(t, ids[2:], payrecon.IntentSucceeded)

	rep, err := c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bound := clock.Now().Add(-catchup.MaxSince)
	if rep.Reset == nil || !rep.Reset.LostTo.Equal(bound) || !rep.Reset.LostFrom.Equal(t0) || !strings.Contains(rep.Reset.Reason, "30 days") {
		t.Fatalf("reset %+v; want a loss from %s (the last event applied) to %s", rep.Reset, t0, bound)
	}
	if rep.Outcomes[applied] != 1 {
		t.Fatalf("outcomes %v; want only the event after the bound applied", rep.Outcomes)
	}
	if s, _ := b.state(t, ids[1]); s != payrecon.StatusPending {
		t.Fatalf("the event Stripe no longer keeps was applied (%s): it must be left to the sweep", s)
	}
	if s, _ := b.state(t, ids[2]); s != payrecon.StatusPaid {
		t.Fatalf("the event after the bound was not applied: %s", s)
	}
	st, err := postgres.NewMonitor(b.pool).EventsStatus(ctx, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].Losses != 1 || st[0].Resets != 1 || !st[0].LostTo.Equal(bound) {
		t.Fatalf("status %+v; want one loss up to the bound", st)
	}
	if n := counter(t, reg, "payrecon_events_cursor_restarts_total", "expired"); n != 1 {
		t.Fatalf("restart metric %v, want 1", n)
	}

	// A first run asked to reach further back than Stripe keeps starts at
	// the bound, and loses nothing it could have had.
	b2 := setup(t, clock)
	old := b2.payments(t, 1)
	clock.Advance(-31 * 24 * time.Hour)
	b2.move(t, old, payrecon.IntentSucceeded) // 31 days before now
	clock.Advance(31 * 24 * time.Hour)
	recent := b2.payments(t, 1)
	b2.move(t, recent, payrecon.IntentSucceeded)
	rep, err = b2.catcher(catchup.Config{Since: 60 * 24 * time.Hour}).Round(ctx)
	if err != nil || rep.Reset != nil || rep.Outcomes[applied] != 1 {
		t.Fatalf("first run with --since 60 days: %+v, %v; want the one event within 30 days applied, no reset", rep, err)
	}
}

// Stripe refuses the cursor's event: the catch-up restarts from the last
// time it was up to date (nothing lost) and goes on. (Only a busy round
// names the cursor's event to Stripe: a quiet one lists by time, from the
// overlap behind it.)
func TestRefusedCursorRestartsWithoutLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	c := b.catcher(catchup.Config{Since: time.Hour})
	b.move(t, b.payments(t, 2), payrecon.IntentSucceeded)
	rep, err := c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cursors.AdvanceEventCursor(ctx, payrecon.EventAdvance{Job: catchup.JobDefault, From: rep.Cursor,
		To: "evt_unknown_to_stripe", ToCreated: time.Now().Add(-10 * time.Minute), Outcome: "test", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ids := b.payments(t, 104)
	b.move(t, ids, payrecon.IntentSucceeded)
	rep, err = c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Reset == nil || !rep.Reset.LostFrom.IsZero() || !strings.Contains(rep.Reset.Reason, "refused") {
		t.Fatalf("reset %+v; want a restart without loss", rep.Reset)
	}
	if rep.Outcomes[applied] != 104 || rep.Outcomes[catchup.OutcomeDuplicate] != 2 {
		t.Fatalf("outcomes %v; want the 104 new events applied and the 2 before them seen again as duplicates", rep.Outcomes)
	}
}

// When nothing happens, a round costs one request: at a 30 s interval, 2 a
// minute. Measured over 10 minutes of the catcher's own clock.
func TestQuietCostIsOneRequestARound(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Now())
	b := setup(t, clock)
	b.move(t, b.payments(t, 1), payrecon.IntentSucceeded)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rounds := 0
	var firstRound int64
	c := b.catcher(catchup.Config{Since: time.Hour, Interval: 30 * time.Second,
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			rounds++
			if rounds == 1 {
				firstRound = b.listRequests()
			}
			if rounds == 21 {
				cancel()
				return ctx.Err()
			}
			clock.Advance(d)
			return nil
		}})
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	quiet := b.listRequests() - firstRound
	if quiet != 20 {
		t.Fatalf("%d requests in 20 quiet rounds (10 minutes at 30 s), want 20: 2 a minute", quiet)
	}
}

// A key without Events: Read stops the catch-up with a configuration error
// naming the permission.
func TestMissingPermissionStopsRun(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionEventRead}})
	err := b.catcher(catchup.Config{}).Run(context.Background())
	if !errors.Is(err, payrecon.ErrConfig) || !strings.Contains(err.Error(), "Events") {
		t.Fatalf("Run: %v; want a configuration error naming Events", err)
	}
	if err := b.gw.CheckAccess(context.Background(), stripeapi.AccessNeeds{Events: true}); !errors.Is(err, payrecon.ErrConfig) {
		t.Fatalf("CheckAccess: %v; want a configuration error", err)
	}
}

// gauge returns the value of an unlabelled gauge.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func counter(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// A lease that cannot be taken (the database refusing connections) does
// not stop Run: it retries, and catches up once the lease comes (issue 13,
// defect 2; Run used to return the error, and `run` exited 1).
func TestRunRetriesALeaseItCannotTake(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ids := b.payments(t, 5)
	pool := b.newPool(t)
	var attempts atomic.Int32
	c := mustNew(b.gw, postgres.NewEvents(pool, postgres.NewWriter(nil), nil), postgres.NewEventCursors(pool), catchup.Config{
		Since: time.Hour, Interval: 20 * time.Millisecond,
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			return payrecon.Sleep(ctx, min(d, 20*time.Millisecond))
		},
		LeaseFunc: func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
			if attempts.Add(1) <= 3 {
				return nil, errors.New("acquire lease \"events\": dial tcp 127.0.0.1:5432: connect: connection refused")
			}
			return postgres.AcquireLease(ctx, pool, job, wait)
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	b.move(t, ids, payrecon.IntentSucceeded)
	testkit.WaitFor(t, "every event applied after the lease came", 30*time.Second, func() bool {
		return b.count(t, "SELECT coalesce((SELECT (outcomes->>'applied')::int FROM stripe_events_cursor), 0)") == 5
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	if n := attempts.Load(); n < 4 {
		t.Errorf("lease tried %d times, want the three failures and a success", n)
	}
}

// Issue 23, defect 7: an event Stripe lists late (visible only after a
// newer one was read and the cursor moved past it) is caught up by the next
// round, from the overlap it lists again behind the cursor; events already
// processed there are not fed to the processor again. A quiet round is
// still one request.
func TestEventListedLateIsCaughtUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	ids := b.payments(t, 3)
	evs := b.move(t, ids, payrecon.IntentSucceeded)
	if err := b.sim.HideEvent(evs[1]); err != nil {
		t.Fatal(err)
	}
	c := b.catcher(catchup.Config{Since: time.Hour})
	rep, err := c.Round(ctx)
	if err != nil || rep.Outcomes[applied] != 2 {
		t.Fatalf("first round: %+v, %v; want the two visible events applied", rep, err)
	}
	if s, _ := b.state(t, ids[1]); s != payrecon.StatusPending {
		t.Fatalf("the hidden event's payment is %s", s)
	}
	if err := b.sim.ShowEvent(evs[1]); err != nil {
		t.Fatal(err)
	}
	rep, err = c.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Late != 1 || rep.Outcomes[applied] != 1 || rep.Requests != 1 {
		t.Fatalf("second round: %+v; want the late event applied, in one request", rep)
	}
	if s, v := b.state(t, ids[1]); s != payrecon.StatusPaid || v != 1 {
		t.Fatalf("the late event's payment is %s v%d, want paid v1", s, v)
	}
	rep, err = c.Round(ctx)
	// Behind the cursor's event (the newest): the two others.
	if err != nil || rep.Processed != 0 || rep.Relisted != 2 || rep.Requests != 1 {
		t.Fatalf("quiet round: %+v, %v; want nothing processed, two relisted, one request", rep, err)
	}
	if n := b.count(t, "SELECT coalesce((outcomes->>$1)::int, 0) FROM stripe_events_cursor", applied); n != 3 {
		t.Fatalf("the cursor counts %d events applied, want 3", n)
	}
}
