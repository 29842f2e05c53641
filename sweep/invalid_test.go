package sweep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/sweep"
)

// A row the sweep cannot use (NULL or empty stripe_payment_intent_id) gets
// one needs_review finding of kind invalid_local_row, is never marked
// verified, does not stop the batch or hold the cursor, and the rows around
// it are checked as usual. A second cycle does not open it twice; once the
// application fixes the row, the next check heals the finding.
func TestInvalidLocalRowGetsFindingAndSweepGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(6))
	// An application table may allow NULL ids (the seed's does not).
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_payment_intent_id = NULL WHERE id = $1", b.ids[1])
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_payment_intent_id = '' WHERE id = $1", b.ids[3])
	s := b.sweeper(sweep.Config{Batch: 4})
	ctx := context.Background()
	for cycle := 1; cycle <= 2; cycle++ {
		rep, err := s.RunCycle(ctx, nil)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		if !rep.Wrapped || rep.Scanned != 6 || rep.Verified != 4 {
			t.Errorf("cycle %d report = %+v, want 6 scanned, 4 verified, wrapped", cycle, rep)
		}
		if rep.Counts[payrecon.NeedsReview] != 2 || rep.Counts[payrecon.InSync] != 4 {
			t.Errorf("cycle %d counts = %v, want 2 needs_review and 4 in_sync", cycle, rep.Counts)
		}
	}
	if got := b.gw.calls.Load(); got != 8 {
		t.Errorf("%d Stripe calls, want 8 (no call for a row without an intent id)", got)
	}
	for _, id := range []int64{b.ids[1], b.ids[3]} {
		if n := b.count(t, `SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND kind = 'invalid_local_row'
			AND verdict = 'needs_review' AND resolved_at IS NULL AND repair_command IS NULL`, id); n != 1 {
			t.Errorf("payment %d: %d open invalid_local_row findings, want 1", id, n)
		}
		if n := b.count(t, "SELECT count(*) FROM payments WHERE id = $1 AND last_reconciled_at IS NULL AND observed_external_status IS NULL", id); n != 1 {
			t.Errorf("payment %d was marked verified", id)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck"); n != 0 {
		t.Errorf("%d rows queued for recheck, want none (an invalid row is not retried early)", n)
	}
	if n := b.count(t, "SELECT count(*) FROM outbox"); n != 0 {
		t.Errorf("%d repair commands, want none", n)
	}

	// The application fixes the row: the next check heals the finding.
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_payment_intent_id = 'pi_fixed' WHERE id = $1", b.ids[1])
	b.gw.set("pi_fixed", payrecon.IntentSucceeded)
	if _, err := s.RunCycle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, `SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND kind = 'invalid_local_row'
		AND resolved_at IS NOT NULL AND resolution = 'healed'`, b.ids[1]); n != 1 {
		t.Error("the fixed row's invalid_local_row finding did not heal")
	}
}

// --max-outage counts from the start of the first failed batch, not its
// end: when Stripe refuses slowly (timeouts, stripe-go's retries), a batch
// can itself outlast MaxOutage, and the sweep must then give up after that
// one batch rather than pause and fail a second one (5 s once gave up after
// 56 s).
func TestMaxOutageCountsFromTheFirstFailedBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(50))
	b.gw.failAll(&payrecon.UnavailableError{StatusCode: 503, Err: errors.New("connection refused")})
	clock := testkit.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	start := clock.Now()
	b.gw.hook = func(context.Context, string) { clock.Advance(200 * time.Millisecond) } // a batch: 50 calls, 10 s
	pauses := 0
	s := b.sweeper(sweep.Config{Batch: 50, Concurrency: 1, MaxOutage: 5 * time.Second, Clock: clock,
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			pauses++
			clock.Advance(d)
			return ctx.Err()
		}})
	_, err := s.RunCycle(context.Background(), nil)
	if !errors.Is(err, sweep.ErrOutage) {
		t.Fatalf("RunCycle err = %v, want ErrOutage", err)
	}
	if elapsed := clock.Now().Sub(start); elapsed != 10*time.Second || pauses != 0 {
		t.Errorf("gave up after %s and %d pauses, want after the one 10 s batch that outlasted --max-outage 5s", elapsed, pauses)
	}
}
