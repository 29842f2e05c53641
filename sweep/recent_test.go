package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/sweep"
)

// The recent window re-verifies exactly the rows created within it, with
// the full sweep's findings and repairs, and never moves the full cycle's
// cursor; ties on created_at across batch boundaries lose no row.
func TestRecentWindowReverifiesRecentRowsWithoutMovingTheFullCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, nil)
	now := time.Now()
	var ps []pgtest.Payment
	stripeOf := map[string]payrecon.StripeStatus{}
	// 300 old rows (10 days), every 10th a lost payment_intent.succeeded.
	for i := range 300 {
		id := fmt.Sprintf("pi_old_%04d", i)
		s := payrecon.IntentSucceeded
		local := payrecon.StatusPaid
		if i%10 == 0 {
			local = payrecon.StatusPending
		}
		ps = append(ps, pgtest.Payment{IntentID: id, Status: local, CreatedAt: now.Add(-240 * time.Hour)})
		stripeOf[id] = s
	}
	// 53 recent rows (created 1 to 8 hours ago) in groups of 7 sharing one
	// created_at, inserted out of time order, every 4th drifted.
	for i := range 53 {
		id := fmt.Sprintf("pi_new_%04d", i)
		local := payrecon.StatusPaid
		if i%4 == 0 {
			local = payrecon.StatusPending
		}
		created := now.Add(-time.Duration(1+(52-i)/7) * time.Hour).Truncate(time.Second)
		ps = append(ps, pgtest.Payment{IntentID: id, Status: local, CreatedAt: created})
		stripeOf[id] = payrecon.IntentSucceeded
	}
	ids := pgtest.InsertPayments(t, b.pool, ps)
	for id, s := range stripeOf {
		b.gw.set(id, s)
	}

	full := b.sweeper(sweep.Config{Batch: 50})
	for range 2 {
		if _, err := full.RunBatch(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fullCursor := b.cursor(t, sweep.DefaultJob)
	if fullCursor != ids[99] {
		t.Fatalf("full cursor at %d after two batches, want %d", fullCursor, ids[99])
	}

	recentJob := sweep.DefaultJob + payrecon.RecentJobSuffix
	recent := mustNew(b.store.Recent(72*time.Hour), b.gw, sweep.Config{Job: recentJob, Batch: 5, Mode: sweep.ModeRetrieve,
		SleepFunc: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	rep, err := recent.RunCycle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != 53 || !rep.Wrapped {
		t.Fatalf("recent cycle scanned %d rows (wrapped %v), want the 53 recent ones", rep.Scanned, rep.Wrapped)
	}
	if rep.NewFindings != 14 || rep.Commands != 14 {
		t.Fatalf("recent cycle opened %d findings and queued %d repairs, want 14 and 14 (every 4th of 53)", rep.NewFindings, rep.Commands)
	}
	if n := b.count(t, `SELECT count(*) FROM payments WHERE stripe_payment_intent_id LIKE 'pi_new_%' AND last_reconciled_at IS NOT NULL`); n != 53 {
		t.Fatalf("%d recent rows verified, want 53", n)
	}
	if n := b.count(t, `SELECT count(*) FROM payments WHERE stripe_payment_intent_id LIKE 'pi_old_%' AND last_reconciled_at IS NOT NULL`); n != 100 {
		t.Fatalf("%d old rows verified, want the 100 the full sweep read (the recent window must not read old rows)", n)
	}
	if n := b.count(t, `SELECT count(*) FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id
	                     WHERE p.stripe_payment_intent_id LIKE 'pi_new_%' AND f.kind = $1 AND f.resolved_at IS NULL`,
		string(payrecon.KindMissedSuccess)); n != 14 {
		t.Fatalf("%d open missed_success findings on recent rows, want 14", n)
	}
	if got := b.cursor(t, sweep.DefaultJob); got != fullCursor {
		t.Fatalf("the recent window moved the full cycle's cursor from %d to %d", fullCursor, got)
	}
	if got := b.cursor(t, recentJob); got != 0 {
		t.Fatalf("recent cursor at %d after its cycle, want 0 (wrapped)", got)
	}

	// The full cycle goes on from where it was and finds the same drift
	// once: no second finding for the rows the window already flagged.
	frep, err := full.RunCycle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if frep.Scanned != 253 {
		t.Fatalf("full cycle scanned %d rows after the window, want the 253 after its cursor", frep.Scanned)
	}
	if n := b.count(t, `SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL`); n != 30+14 {
		t.Fatalf("%d open findings, want 44 (30 old, 14 recent), each once", n)
	}
}
