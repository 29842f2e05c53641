package relay_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
)

// Issue 23, defect 3: a cancel queued for pi_old is not applied after the
// application pointed the row at pi_new: the canonical writer refuses the
// command (intent_mismatch, nothing changed), and the finding stays open
// with the reason.
func TestRepairIsNotAppliedToARowPointedAtAnotherIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	ids := pgtest.InsertPayments(t, b.pool, []pgtest.Payment{
		{IntentID: "pi_old", Status: payrecon.StatusPending},
		{IntentID: "pi_same", Status: payrecon.StatusPending},
	})
	var outbox []int64
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH f AS (
			    INSERT INTO reconciliation_findings (payment_id, stripe_payment_intent_id, kind, local_status,
			           external_status, verdict, repair_command, reason, job)
			    SELECT id, stripe_payment_intent_id, 'missed_cancel', 'pending', 'canceled', 'repairable',
			           'ApplyPaymentCanceled', 'test', 'test'
			      FROM payments WHERE id = ANY($1)
			    RETURNING id, payment_id, stripe_payment_intent_id
			)
			INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'Payment', payment_id::text, 'ApplyPaymentCanceled',
			       jsonb_build_object('payment_id', payment_id, 'finding_id', id, 'expected_local_status', 'pending',
			                          'stripe_payment_intent_id', stripe_payment_intent_id, 'observed_external_status', 'canceled')
			  FROM f ORDER BY payment_id
			RETURNING id`, ids)
		if err != nil {
			return err
		}
		if outbox, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		return b.relay.Enqueue(ctx, tx, outbox)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The application re-points the first row at a new attempt, still processing.
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_payment_intent_id = 'pi_new' WHERE id = $1", ids[0])
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 1 || rep.Unapplied != 1 {
		t.Errorf("drain %+v; want the unchanged row applied and the re-pointed one left for review", rep)
	}
	var status string
	if err := b.pool.QueryRow(ctx, "SELECT status FROM payments WHERE id = $1", ids[0]).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != string(payrecon.StatusPending) {
		t.Fatalf("the re-pointed payment is %s: a cancel judged for pi_old was applied to pi_new's row", status)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions WHERE payment_id = $1", ids[0]); n != 0 {
		t.Errorf("%d transitions recorded for the re-pointed payment", n)
	}
	var open bool
	var outcome string
	if err := b.pool.QueryRow(ctx, "SELECT resolved_at IS NULL, coalesce(repair_outcome, '') FROM reconciliation_findings WHERE payment_id = $1", ids[0]).Scan(&open, &outcome); err != nil {
		t.Fatal(err)
	}
	if !open || !strings.HasPrefix(outcome, string(payrecon.IntentMismatch)) || !strings.Contains(outcome, "pi_old") {
		t.Errorf("finding open %v, outcome %q; want it open with the intent mismatch named", open, outcome)
	}
	if err := b.pool.QueryRow(ctx, "SELECT status FROM payments WHERE id = $1", ids[1]).Scan(&status); err != nil || status != string(payrecon.StatusFailed) {
		t.Errorf("the unchanged row is %s (%v), want failed", status, err)
	}
}
