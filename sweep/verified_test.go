package sweep_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// Issue 20, step 1: a cycle over rows whose Stripe state did not change
// leaves payments alone; what was verified, and when, is in payrecon's own
// tables, and the lag still comes from what was verified.

// rowVersions is each payments row's tuple id and transaction (ctid, xmin):
// any write to a row, even one that changes nothing, changes both.
func rowVersions(t *testing.T, b *testBundle) map[int64]string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT id, ctid::text || '/' || xmin::text FROM payments")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var v string
		if err := rows.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rewritten lists the rows whose version differs between two snapshots.
func rewritten(before, after map[int64]string) []int64 {
	var ids []int64
	for id, v := range after {
		if before[id] != v {
			ids = append(ids, id)
		}
	}
	return ids
}

func dbNow(t *testing.T, b *testBundle) time.Time {
	t.Helper()
	var now time.Time
	if err := b.pool.QueryRow(context.Background(), "SELECT clock_timestamp()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

func cycle(t *testing.T, s *sweep.Sweeper) sweep.CycleReport {
	t.Helper()
	rep, err := s.RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestUnchangedCyclesLeavePaymentsAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(30))
	s := b.sweeper(sweep.Config{Batch: 7})
	if rep := cycle(t, s); rep.Verified != 30 || rep.Duration <= 0 {
		t.Fatalf("cycle 1 verified %d in %s, want 30 in some time", rep.Verified, rep.Duration)
	}
	// The first verification is a change: every row gets its columns.
	if n := b.count(t, "SELECT count(*) FROM payments WHERE observed_external_status = 'succeeded' AND last_reconciled_at IS NOT NULL"); n != 30 {
		t.Fatalf("%d rows with their first observation written, want 30", n)
	}
	for c := 2; c <= 3; c++ {
		before := rowVersions(t, b)
		if rep := cycle(t, s); rep.Verified != 30 {
			t.Fatalf("cycle %d verified %d, want 30", c, rep.Verified)
		}
		if ids := rewritten(before, rowVersions(t, b)); len(ids) != 0 {
			t.Errorf("cycle %d rewrote payments rows %v, whose Stripe state did not change", c, ids)
		}
		// What the cycle verified is in payrecon's table: ranges that
		// partition the ids, one per batch.
		if n := b.count(t, "SELECT count(*) FROM reconciliation_verified_ranges WHERE job = $1", sweep.DefaultJob); n != 5 {
			t.Errorf("cycle %d: %d verified ranges, want one per batch (5)", c, n)
		}
		if n := b.count(t, `SELECT count(*) FROM payments p WHERE (SELECT count(*) FROM reconciliation_verified_ranges r
			WHERE r.job = $1 AND r.ids @> p.id) <> 1`, sweep.DefaultJob); n != 0 {
			t.Errorf("cycle %d: %d rows not covered by exactly one range", c, n)
		}
	}
	// --verified-refresh off: every verification writes, as before.
	before := rowVersions(t, b)
	cycle(t, b.sweeper(sweep.Config{Batch: 7, VerifiedRefresh: sweep.Off}))
	if ids := rewritten(before, rowVersions(t, b)); len(ids) != 30 {
		t.Errorf("with --verified-refresh 0, %d rows rewritten, want 30", len(ids))
	}
}

// The lag stays exact across cycles that do not touch payments: a row the
// application changes (in the grace window) and a row Stripe cannot answer
// for are queued with their last verification, the previous cycle's, not
// their columns' older time; a row whose Stripe status changed gets its
// columns written in that cycle.
func TestLagExactAcrossCyclesThatLeavePaymentsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rows := uniform(12)
	rows[2] = row{payrecon.StatusPending, payrecon.IntentRequiresPaymentMethod}
	b := setup(t, rows)
	changed, unanswered, moved := b.ids[0], b.ids[1], b.ids[2]
	s := b.sweeper(sweep.Config{Batch: 100, RecheckWait: sweep.Off})
	cycle(t, s)
	t2a := dbNow(t, b)
	before := rowVersions(t, b)
	cycle(t, s)
	t2b := dbNow(t, b)
	if ids := rewritten(before, rowVersions(t, b)); len(ids) != 0 {
		t.Fatalf("cycle 2 rewrote rows %v", ids)
	}

	pgtest.Exec(t, b.pool, "UPDATE payments SET version = version + 1, updated_at = now() WHERE id = $1", changed)
	b.gw.fail(fmt.Sprintf("pi_%05d", 2), &payrecon.UnavailableError{StatusCode: 503, Err: fmt.Errorf("down")})
	b.gw.set(fmt.Sprintf("pi_%05d", 3), payrecon.IntentProcessing)
	before = rowVersions(t, b)
	t3a := dbNow(t, b)
	cycle(t, s)
	t3b := dbNow(t, b)

	for _, tc := range []struct {
		name   string
		id     int64
		reason string
	}{{"changed by the application", changed, payrecon.RecheckGrace}, {"left unverifiable", unanswered, payrecon.RecheckUnverifiable}} {
		var reason string
		var verifiedBefore, column time.Time
		if err := b.pool.QueryRow(ctx, `SELECT r.reason, r.verified_before, p.last_reconciled_at
			  FROM reconciliation_recheck r JOIN payments p ON p.id = r.payment_id WHERE r.payment_id = $1`, tc.id).
			Scan(&reason, &verifiedBefore, &column); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if reason != tc.reason {
			t.Errorf("%s: queued for %s, want %s", tc.name, reason, tc.reason)
		}
		if verifiedBefore.Before(t2a) || verifiedBefore.After(t2b) {
			t.Errorf("%s: queued as last verified at %s, want cycle 2's read (%s .. %s), not its column's %s",
				tc.name, verifiedBefore, t2a, t2b, column)
		}
	}
	var observed string
	var at time.Time
	if err := b.pool.QueryRow(ctx, "SELECT observed_external_status, last_reconciled_at FROM payments WHERE id = $1", moved).Scan(&observed, &at); err != nil {
		t.Fatal(err)
	}
	if observed != string(payrecon.IntentProcessing) || at.Before(t3a) || at.After(t3b) {
		t.Errorf("the row whose Stripe status changed: %s at %s; want processing, read in cycle 3 (%s .. %s)", observed, at, t3a, t3b)
	}
	if ids := rewritten(before, rowVersions(t, b)); len(ids) != 1 || ids[0] != moved {
		t.Errorf("cycle 3 rewrote rows %v; want only the one whose Stripe status changed (%d)", ids, moved)
	}
	// The lag: the oldest verification is the queued rows', cycle 2's.
	now := dbNow(t, b)
	lag, ok, err := postgres.NewMonitor(b.pool).Lag(ctx, now)
	if err != nil || !ok {
		t.Fatalf("lag: %v %v", ok, err)
	}
	if lag < now.Sub(t2b) || lag > now.Sub(t2a) {
		t.Errorf("lag %s, want the queued rows' last verification: %s .. %s", lag, now.Sub(t2b), now.Sub(t2a))
	}
}

// --verified-refresh bounds the columns' age: after a cycle, no verified
// row's last_reconciled_at is older than the refresh period, and the rows
// written are exactly those whose refresh came due (their phase, set by
// their id, crossed a period boundary since their last write).
func TestVerifiedRefreshBoundsTheColumnsAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 3000
	const refresh = time.Hour
	b := setup(t, uniform(n))
	s := b.sweeper(sweep.Config{Batch: 1000, VerifiedRefresh: refresh})
	cycle(t, s)
	// Columns last written at ages spread over three periods.
	pgtest.Exec(t, b.pool, "UPDATE payments SET last_reconciled_at = now() - (id * 7919 % 10800) * interval '1 second'")
	last := map[int64]time.Time{}
	rs, err := b.pool.Query(ctx, "SELECT id, last_reconciled_at FROM payments")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id int64
		var at time.Time
		if err := rs.Scan(&id, &at); err != nil {
			t.Fatal(err)
		}
		last[id] = at
	}
	rs.Close()
	before := rowVersions(t, b)
	ta := dbNow(t, b)
	cycle(t, s)
	tb := dbNow(t, b)
	written := map[int64]bool{}
	for _, id := range rewritten(before, rowVersions(t, b)) {
		written[id] = true
	}
	epoch := func(at time.Time, id int64) float64 {
		return math.Floor(float64(at.UnixMicro())/1e6/refresh.Seconds() + float64(id%4096)/4096)
	}
	for id, at := range last {
		dueBy, dueAt := epoch(tb, id) > epoch(at, id), epoch(ta, id) > epoch(at, id)
		switch {
		case dueAt && !written[id]:
			t.Errorf("row %d, written %s before the cycle, was due and not refreshed", id, ta.Sub(at).Round(time.Second))
		case !dueBy && written[id]:
			t.Errorf("row %d, written %s before the cycle, was refreshed before it was due", id, ta.Sub(at).Round(time.Second))
		}
	}
	if len(written) == 0 || len(written) == n {
		t.Errorf("%d of %d rows refreshed: want the due ones only", len(written), n)
	}
	if old := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at < $1", ta.Add(-refresh)); old != 0 {
		t.Errorf("%d rows' columns older than the refresh period after the cycle", old)
	}
}

// An answer older than one another job already had, and left unwritten
// because it did not change the status, is still never applied: here job
// a reads requires_action, Stripe goes back to requires_payment_method
// (the customer's authentication failed) and job b reads that while a's
// answer is on its way. b writes nothing (the status it saw is the one
// stored), and a's older answer must not put requires_action back.
func TestOlderAnswerNeverOverwritesANewerUnwrittenOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, []row{{payrecon.StatusPending, payrecon.IntentRequiresPaymentMethod}})
	if rep := cycle(t, b.sweeper(sweep.Config{Job: "b"})); rep.Verified != 1 {
		t.Fatalf("job b's first cycle: %+v", rep)
	}
	b.gw.set("pi_00001", payrecon.IntentRequiresAction)
	stale := &staleGateway{fakeGateway: b.gw, during: func() {
		b.gw.set("pi_00001", payrecon.IntentRequiresPaymentMethod)
		before := rowVersions(t, b)
		if rep, err := b.sweeper(sweep.Config{Job: "b"}).RunBatch(ctx); err != nil || rep.Verified != 1 {
			t.Errorf("job b: %+v, %v", rep, err)
		}
		if ids := rewritten(before, rowVersions(t, b)); len(ids) != 0 {
			t.Errorf("job b rewrote %v for an unchanged status", ids)
		}
	}}
	rep, err := mustNew(b.store, stale, sweep.Config{Job: "a", Mode: sweep.ModeRetrieve}).RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified != 0 {
		t.Errorf("job a's older answer verified %d rows, want 0", rep.Verified)
	}
	var observed string
	if err := b.pool.QueryRow(ctx, "SELECT observed_external_status FROM payments").Scan(&observed); err != nil {
		t.Fatal(err)
	}
	if observed != string(payrecon.IntentRequiresPaymentMethod) {
		t.Errorf("payments says Stripe said %s: an older answer moved it back", observed)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck WHERE job = 'a' AND reason = $1", payrecon.RecheckChanged); n != 1 {
		t.Errorf("the row is not queued for a fresh look by job a")
	}
}
