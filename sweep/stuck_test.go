package sweep_test

import (
	"context"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/sweep"
)

// A row observed continuously in one in-flight status past its limit gets a
// stuck_in_flight finding, measured from the first observation (kept in the
// database, so a new sweeper, as after a restart, goes on counting); it
// heals when the row settles. A row that moves between in-flight statuses
// starts again and is never stuck for it.
func TestStuckInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, []row{
		{payrecon.StatusPending, payrecon.IntentProcessing},      // 0: stuck at 72h, then settles
		{payrecon.StatusPending, payrecon.IntentRequiresCapture}, // 1: moves along normally
		{payrecon.StatusPending, payrecon.IntentRequiresAction},  // 2: stuck at 24h, stays stuck
		{payrecon.StatusPaid, payrecon.IntentSucceeded},          // 3: settled: never
	})
	start := time.Now().Add(time.Hour) // every row is outside the grace window
	clock := testkit.NewClock(start)
	limits, err := payrecon.ParseStuckAfter(payrecon.DefaultStuckAfter)
	if err != nil {
		t.Fatal(err)
	}
	cycle := func() {
		t.Helper()
		s := b.sweeper(sweep.Config{Clock: clock, StuckAfter: limits, Batch: 10})
		if _, err := s.RunCycle(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
	}
	stuck := func(i int) int {
		return b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'stuck_in_flight' AND resolved_at IS NULL AND payment_id = $1", b.ids[i])
	}

	cycle()
	clock.Advance(23 * time.Hour)
	cycle()
	for i := range 4 {
		if stuck(i) != 0 {
			t.Errorf("row %d stuck after 23 h", i)
		}
	}
	clock.Advance(2 * time.Hour) // 25 h: requires_action is past 24h
	cycle()
	if stuck(2) != 1 || stuck(0) != 0 {
		t.Errorf("at 25 h: requires_action stuck %d, processing stuck %d", stuck(2), stuck(0))
	}
	// Row 1 moves from requires_capture to processing: a new status, a new clock.
	clock.Advance(100 * time.Hour) // 125 h
	b.gw.set("pi_00002", payrecon.IntentProcessing)
	cycle()
	if stuck(0) != 1 {
		t.Errorf("processing for 125 h is not stuck")
	}
	if stuck(1) != 0 {
		t.Errorf("a row that just moved to processing is stuck")
	}
	// Row 0 settles: healed, its observation gone.
	b.gw.set("pi_00001", payrecon.IntentSucceeded)
	clock.Advance(time.Hour)
	cycle()
	if stuck(0) != 0 || b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'stuck_in_flight' AND resolution = 'healed' AND payment_id = $1", b.ids[0]) != 1 {
		t.Errorf("a settled row's stuck finding did not heal")
	}
	if n := b.count(t, "SELECT count(*) FROM payment_inflight_observations WHERE payment_id = $1", b.ids[0]); n != 0 {
		t.Errorf("a settled row keeps its observation")
	}
	if stuck(2) != 1 {
		t.Errorf("row 2, still requires_action, is no longer stuck")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'stuck_in_flight'"); n != 2 {
		t.Errorf("%d stuck findings in all, want 2 (never twice for one stay)", n)
	}
	// The stuck finding sits beside the status finding (row 0's missed_success).
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND payment_id = $1", b.ids[0]); n != 1 {
		t.Errorf("row 0 has no missed_success finding")
	}
	// Off: no finding, but the observation is kept all the same: it is a
	// fact about the payment, not about this process's limits.
	c := setup(t, []row{{payrecon.StatusPending, payrecon.IntentProcessing}})
	s := c.sweeper(sweep.Config{Clock: clock})
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := c.count(t, "SELECT count(*) FROM payment_inflight_observations"); n != 1 {
		t.Errorf("%d observations with --stuck-after off, want 1", n)
	}
	if n := c.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'stuck_in_flight'"); n != 0 {
		t.Errorf("a stuck finding with --stuck-after off")
	}
}

// Issue 23, defect 2: a process without --stuck-after limits (findings
// recheck), or with other limits, neither restarts the stuck clock nor heals
// a stuck_in_flight finding while the payment is still in that status.
func TestStuckClockDoesNotDependOnTheCommittingProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, []row{{payrecon.StatusPending, payrecon.IntentRequiresCapture}})
	start := time.Now().Add(time.Hour)
	clock := testkit.NewClock(start)
	limits, err := payrecon.ParseStuckAfter(payrecon.DefaultStuckAfter)
	if err != nil {
		t.Fatal(err)
	}
	longer, err := payrecon.ParseStuckAfter("requires_capture=400h")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cycle := func(l payrecon.StuckAfter) {
		t.Helper()
		if _, err := b.sweeper(sweep.Config{Clock: clock, StuckAfter: l}).RunCycle(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	first := func() time.Time {
		t.Helper()
		var at time.Time
		if err := b.pool.QueryRow(ctx, "SELECT first_observed_at FROM payment_inflight_observations WHERE payment_id = $1", b.ids[0]).Scan(&at); err != nil {
			t.Fatalf("the observation is gone: %v", err)
		}
		return at
	}
	stuck := func() int {
		return b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'stuck_in_flight' AND resolved_at IS NULL")
	}
	cycle(limits)
	since := first()
	clock.Advance(100 * time.Hour)
	// findings recheck: no limits at all.
	rows := []payrecon.PaymentRow{{ID: b.ids[0], IntentID: "pi_00001", Status: payrecon.StatusPending, Version: 0}}
	if _, _, err := b.sweeper(sweep.Config{Clock: clock}).Recheck(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if got := first(); !got.Equal(since) {
		t.Fatalf("a recheck without limits restarted the clock: first observed %s, was %s", got, since)
	}
	clock.Advance(50 * time.Hour) // 150 h > 144 h
	cycle(limits)
	if stuck() != 1 {
		t.Fatalf("requires_capture for 150 h is not stuck")
	}
	// Another process with a longer limit, and one with none: still stuck.
	cycle(longer)
	cycle(nil)
	if stuck() != 1 {
		t.Fatalf("a process with other limits healed a payment that is still stuck")
	}
	if _, _, err := b.sweeper(sweep.Config{Clock: clock}).Recheck(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if stuck() != 1 {
		t.Fatalf("findings recheck healed a payment that is still stuck")
	}
	// It settles: healed by any process.
	b.gw.set("pi_00001", payrecon.IntentSucceeded)
	clock.Advance(time.Hour)
	cycle(nil)
	if stuck() != 0 {
		t.Fatalf("a settled payment is still stuck")
	}
}

func TestParseStuckAfter(t *testing.T) {
	t.Parallel()
	sa, err := payrecon.ParseStuckAfter(payrecon.DefaultStuckAfter)
	if err != nil || sa.String() != payrecon.DefaultStuckAfter || sa[payrecon.IntentRequiresCapture] != 144*time.Hour {
		t.Errorf("default: %v %v", sa, err)
	}
	for _, bad := range []string{"succeeded=1h", "processing", "processing=soon", "processing=-1h"} {
		if _, err := payrecon.ParseStuckAfter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if sa, err := payrecon.ParseStuckAfter("off"); err != nil || len(sa) != 0 || sa.String() != "off" {
		t.Errorf("off: %v %v", sa, err)
	}
}
