package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// setupReviewWebhook is setupWebhook with the events processor in repair
// mode mode, holding its commands through an insert-only relay.
func setupReviewWebhook(t *testing.T, mode payrecon.RepairMode) (*webhookBundle, *relay.Relay) {
	t.Helper()
	pool := pgtest.NewDB(t)
	b := &webhookBundle{pool: pool, clock: testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))}
	writer := postgres.NewWriter(b.clock)
	rl, err := relay.New(pool, writer, relay.Config{InsertOnly: true, Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	events := postgres.NewEvents(pool, writer, b.clock)
	events.RepairMode, events.HoldFunc = mode, rl.HoldFunc()
	b.serve(t, httpapi.Deps{Clock: b.clock, Events: events, Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
	return b, rl
}

// Under review, a webhook that would move a payment does not: it opens the
// decision table's finding with a repair command held for approval; a
// redelivery is a duplicate; a failed attempt (judged in sync) opens
// nothing; events that move nothing (already in the target, missing
// payment) answer as they do in apply mode. After approval the repair,
// not the webhook, moves the payment, once.
func TestWebhookUnderReviewHoldsTransitions(t *testing.T) {
	t.Parallel()
	b, rl := setupReviewWebhook(t, payrecon.RepairReview)
	ctx := context.Background()
	b.insertPayments(t, payrecon.StatusPending, "pi_succ", "pi_fail")
	b.insertPayments(t, payrecon.StatusPaid, "pi_paid")
	now := b.clock.Now()
	cases := []struct {
		id, typ, intent string
		status          payrecon.StripeStatus
		want            string
	}{
		{"evt_1", payrecon.EventPaymentIntentSucceeded, "pi_succ", payrecon.IntentSucceeded, payrecon.OutcomeHeld},
		{"evt_1", payrecon.EventPaymentIntentSucceeded, "pi_succ", payrecon.IntentSucceeded, payrecon.OutcomeHeld}, // redelivered
		{"evt_2", payrecon.EventPaymentIntentPaymentFailed, "pi_fail", payrecon.IntentRequiresPaymentMethod, payrecon.OutcomeNotApplied},
		{"evt_3", payrecon.EventPaymentIntentSucceeded, "pi_paid", payrecon.IntentSucceeded, string(payrecon.AlreadyInTarget)},
		{"evt_4", payrecon.EventPaymentIntentSucceeded, "pi_nobody", payrecon.IntentSucceeded, string(payrecon.PaymentMissing)},
	}
	for _, c := range cases {
		resp := b.deliver(t, event(c.id, c.typ, c.intent, c.status, now))
		if resp.status != 200 {
			t.Fatalf("%s: status %d %s", c.id, resp.status, resp.body)
		}
		if got := resp.json(t)["outcome"]; got != c.want {
			t.Errorf("%s (%s on %s): outcome %v, want %s", c.id, c.typ, c.intent, got, c.want)
		}
	}
	for _, intent := range []string{"pi_succ", "pi_fail"} {
		if p := b.payment(t, intent); p.status != payrecon.StatusPending || p.version != 0 {
			t.Errorf("%s moved under review: %+v", intent, p)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions"); n != 0 {
		t.Errorf("%d transitions under review, want 0", n)
	}
	held, err := postgres.NewMonitor(b.pool).HeldRepairs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[0].Kind != payrecon.KindMissedSuccess || held[0].Command != payrecon.ApplyPaymentSucceeded || held[0].Job != "webhook" {
		t.Fatalf("held repairs: %+v; want the one missed_success from the webhook", held)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL"); n != 2 {
		t.Errorf("open findings: %d, want 2 (missed_success, missing_locally)", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'pending'", relay.Kind); n != 1 {
		t.Errorf("pending repair jobs: %d, want 1", n)
	}

	worker, err := relay.New(b.pool, postgres.NewWriter(b.clock), relay.Config{Workers: 2, DrainPollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := worker.Drain(ctx); err != nil || rep.Applied != 0 {
		t.Fatalf("drain before approval: %+v, %v", rep, err)
	}
	if ar, err := rl.Approve(ctx, []int64{held[0].OutboxID}, false, "alice"); err != nil || len(ar.Approved) != 1 {
		t.Fatalf("approve: %+v, %v", ar, err)
	}
	if rep, err := worker.Drain(ctx); err != nil || rep.Applied != 1 {
		t.Fatalf("drain after approval: %+v, %v", rep, err)
	}
	if p := b.payment(t, "pi_succ"); p.status != payrecon.StatusPaid || p.version != 1 {
		t.Errorf("pi_succ after approval: %+v, want paid at version 1", p)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions WHERE source = 'repair'"); n != 1 {
		t.Errorf("repair transitions: %d, want 1", n)
	}
}

// Under off, an event that would move a payment opens its finding without
// a command.
func TestWebhookUnderOffOpensFindingOnly(t *testing.T) {
	t.Parallel()
	b, _ := setupReviewWebhook(t, payrecon.RepairOff)
	b.insertPayments(t, payrecon.StatusPending, "pi_cancel")
	resp := b.deliver(t, event("evt_c", payrecon.EventPaymentIntentCanceled, "pi_cancel", payrecon.IntentCanceled, b.clock.Now()))
	if got := resp.json(t)["outcome"]; resp.status != 200 || got != payrecon.OutcomeNotApplied {
		t.Fatalf("status %d, outcome %v; want 200, %s", resp.status, got, payrecon.OutcomeNotApplied)
	}
	if p := b.payment(t, "pi_cancel"); p.status != payrecon.StatusPending {
		t.Errorf("payment moved under off: %+v", p)
	}
	for what, c := range map[string]struct {
		sql  string
		want int
	}{
		"missed_cancel findings without a command": {"SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_cancel' AND repair_command IS NULL AND resolved_at IS NULL", 1},
		"outbox rows": {"SELECT count(*) FROM outbox", 0},
		"jobs":        {"SELECT count(*) FROM river_job", 0},
	} {
		if got := pgtest.Count(t, b.pool, c.sql); got != c.want {
			t.Errorf("%s: %d, want %d", what, got, c.want)
		}
	}
}
