package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
)

// A refund or a dispute webhook opens its money finding at once, without a
// sweep, through the money rules the sweep uses; the payment is never
// touched; a redelivery opens nothing twice; ignored kinds are not recorded.
func TestChargeWebhooksOpenMoneyFindings(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	sim := simtest.Start(t, stripesim.Config{Seed: 3})
	ids := b.insertPayments(t, payrecon.StatusPaid, intentID(1), intentID(2), intentID(3))
	b.insertPayments(t, payrecon.StatusFailed, intentID(4))
	b.insertPayments(t, payrecon.StatusPending, intentID(5))
	for n := 1; n <= 6; n++ { // 6 has no local row
		sim.Put(stripesim.Intent{ID: intentID(n), Status: payrecon.IntentSucceeded, Amount: 5000, Currency: "jpy"})
	}
	state := func() string {
		rows, err := b.pool.Query(context.Background(), "SELECT id, status, version, updated_at, observed_external_status, last_reconciled_at FROM payments ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var sb strings.Builder
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&sb, v...)
		}
		return sb.String()
	}
	before := state()

	type step struct {
		do      func() (string, error)
		outcome string
		kind    payrecon.Kind
		intent  int
	}
	steps := []step{
		{func() (string, error) { return sim.Refund(intentID(1), 1200) }, payrecon.OutcomeMoneyFinding, payrecon.KindPartiallyRefunded, 1},
		{func() (string, error) { return sim.Refund(intentID(2), 0) }, payrecon.OutcomeMoneyFinding, payrecon.KindRefundedExternally, 2},
		{func() (string, error) { return sim.Dispute(intentID(3)) }, payrecon.OutcomeMoneyFinding, payrecon.KindDisputed, 3},
		{func() (string, error) { return sim.Refund(intentID(4), 0) }, payrecon.OutcomeIgnored, "", 4}, // failed locally: not a refund of a paid order
		{func() (string, error) { return sim.Dispute(intentID(5)) }, payrecon.OutcomeMoneyFinding, payrecon.KindDisputed, 5},
		{func() (string, error) { return sim.Refund(intentID(6), 0) }, string(payrecon.PaymentMissing), "", 6},
	}
	for _, s := range steps {
		evID, err := s.do()
		if err != nil {
			t.Fatal(err)
		}
		payload, err := sim.EventPayload(evID)
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 0; attempt < 2; attempt++ {
			r := b.deliver(t, payload)
			if r.status != 200 {
				t.Fatalf("%s: HTTP %d %s", evID, r.status, r.body)
			}
			if got := r.json(t)["outcome"]; got != s.outcome {
				t.Errorf("intent %d attempt %d: outcome %v, want %s (%s)", s.intent, attempt, got, s.outcome, r.body)
			}
		}
		want := 0
		if s.kind != "" {
			want = 1
		}
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE stripe_payment_intent_id = $1 AND kind = $2 AND job = 'webhook' AND resolved_at IS NULL AND details IS NOT NULL",
			intentID(s.intent), string(s.kind)); n != want {
			t.Errorf("intent %d: %d open %s findings, want %d", s.intent, n, s.kind, want)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings"); n != 4 {
		t.Errorf("%d findings in all, want 4", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox"); n != 0 {
		t.Errorf("%d repair commands queued by money webhooks", n)
	}
	if after := state(); after != before {
		t.Errorf("a money webhook changed payments:\n%s\n%s", before, after)
	}
	var amount int64
	if err := b.pool.QueryRow(context.Background(), "SELECT (details->'charge'->>'amount_refunded')::bigint FROM reconciliation_findings WHERE payment_id = $1", ids[0]).Scan(&amount); err != nil || amount != 1200 {
		t.Errorf("details of the partial refund: %d, %v", amount, err)
	}

	// An ignored kind is not recorded by the event processor.
	ev := postgres.NewEvents(b.pool, postgres.NewWriter(nil), b.clock)
	ev.Ignore = map[payrecon.Kind]bool{payrecon.KindDisputed: true}
	b.insertPayments(t, payrecon.StatusPaid, intentID(7))
	sim.Put(stripesim.Intent{ID: intentID(7), Status: payrecon.IntentSucceeded, Amount: 5000, Currency: "jpy"})
	evID, err := sim.Dispute(intentID(7))
	if err != nil {
		t.Fatal(err)
	}
	payload, err := sim.EventPayload(evID)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := payrecon.ParseEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ev.ProcessEvent(context.Background(), parsed)
	if err != nil || res.Outcome != payrecon.OutcomeIgnored {
		t.Errorf("ignored dispute: %+v, %v", res, err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE stripe_payment_intent_id = $1", intentID(7)); n != 0 {
		t.Errorf("an ignored kind was recorded")
	}
	// missing_locally ignored: an event for an intent with no local row opens nothing.
	ev.Ignore[payrecon.KindMissingLocally] = true
	parsed, err = payrecon.ParseEvent(event("evt_unknown", payrecon.EventPaymentIntentSucceeded, intentID(99), payrecon.IntentSucceeded, b.clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ev.ProcessEvent(context.Background(), parsed); err != nil || res.Outcome != string(payrecon.PaymentMissing) || res.FindingID != 0 {
		t.Errorf("ignored missing_locally: %+v, %v", res, err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally'"); n != 0 {
		t.Errorf("an ignored missing_locally was recorded")
	}
}
