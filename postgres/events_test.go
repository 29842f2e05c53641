package postgres_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/internal/webhooktest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
)

// The webhook's road into the database, end to end: signed deliveries
// through httpapi's handler into postgres.Events and the canonical writer.
// httpapi's own tests cover the handler without a database.

const (
	secret    = webhooktest.Secret
	oldSecret = webhooktest.OldSecret
)

type webhookBundle struct {
	pool  *pgxpool.Pool
	clock *testkit.Clock
	srv   *webhooktest.Server
}

// setup serves the API on a real listener over a fresh database, with the
// given signing secrets (secret when none) and a fake clock far from real
// time, so a check against time.Now instead of the injected clock fails.
func setupWebhook(t *testing.T, secrets ...string) *webhookBundle {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	pool := pgtest.NewDB(t)
	b := &webhookBundle{pool: pool, clock: testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))}
	b.serve(t, httpapi.Deps{
		Clock:   b.clock,
		Events:  postgres.NewEvents(pool, postgres.NewWriter(nil), b.clock),
		Webhook: httpapi.WebhookConfig{Secrets: secrets, MaxBodyBytes: 64 << 10},
	})
	return b
}

// serve starts a server for deps and a client of the test's own.
func (b *webhookBundle) serve(t *testing.T, deps httpapi.Deps) {
	t.Helper()
	b.srv = webhooktest.Serve(t, httpapi.NewServer(deps))
}

// event renders a Stripe event about a PaymentIntent (webhooktest.Event).
func event(id, typ, intentID string, status payrecon.StripeStatus, created time.Time) []byte {
	return webhooktest.Event(id, typ, intentID, status, created)
}

type response struct {
	status int
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	return webhooktest.JSON(t, r.body)
}

// post delivers payload with the given Stripe-Signature header ("" for none).
func (b *webhookBundle) post(t *testing.T, payload []byte, sig string) response {
	t.Helper()
	status, body := b.srv.Post(t, payload, sig)
	return response{status, body}
}

// deliver signs payload with secret at the clock's now and posts it.
func (b *webhookBundle) deliver(t *testing.T, payload []byte) response {
	t.Helper()
	status, body := b.srv.Deliver(t, payload, b.clock.Now())
	return response{status, body}
}

// insertPayments inserts one payment per intent id with the given status.
func (b *webhookBundle) insertPayments(t *testing.T, status payrecon.LocalStatus, intents ...string) []int64 {
	t.Helper()
	ps := make([]pgtest.Payment, len(intents))
	for i, id := range intents {
		ps[i] = pgtest.Payment{IntentID: id, Status: status}
	}
	return pgtest.InsertPayments(t, b.pool, ps)
}

type payment struct {
	status  payrecon.LocalStatus
	version int64
}

func (b *webhookBundle) payment(t *testing.T, intent string) payment {
	t.Helper()
	var p payment
	if err := b.pool.QueryRow(context.Background(),
		"SELECT status, version FROM payments WHERE stripe_payment_intent_id = $1", intent).Scan(&p.status, &p.version); err != nil {
		t.Fatalf("payment %s: %v", intent, err)
	}
	return p
}

func intentID(n int) string { return webhooktest.IntentID(n) }

func TestWebhookAppliesEachHandledEvent(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	ids := b.insertPayments(t, payrecon.StatusPending, intentID(1), intentID(2), intentID(3))
	cases := []struct {
		typ    string
		status payrecon.StripeStatus
		want   payrecon.LocalStatus
	}{
		{payrecon.EventPaymentIntentSucceeded, payrecon.IntentSucceeded, payrecon.StatusPaid},
		{payrecon.EventPaymentIntentCanceled, payrecon.IntentCanceled, payrecon.StatusFailed},
		{payrecon.EventPaymentIntentPaymentFailed, payrecon.IntentRequiresPaymentMethod, payrecon.StatusFailed},
	}
	for i, c := range cases {
		evID := fmt.Sprintf("evt_%d", i)
		r := b.deliver(t, event(evID, c.typ, intentID(i+1), c.status, b.clock.Now()))
		if r.status != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.typ, r.status, r.body)
		}
		if got := r.json(t); got["outcome"] != "applied" || got["event_id"] != evID || got["payment_id"] != float64(ids[i]) {
			t.Errorf("%s: answer %v", c.typ, got)
		}
		if p := b.payment(t, intentID(i+1)); p.status != c.want || p.version != 1 {
			t.Errorf("%s: payment is %+v, want %s version 1", c.typ, p, c.want)
		}
		var (
			outcome, typ string
			pid          int64
			received     time.Time
		)
		if err := b.pool.QueryRow(context.Background(),
			"SELECT outcome, event_type, payment_id, received_at FROM stripe_webhook_events WHERE event_id = $1", evID).
			Scan(&outcome, &typ, &pid, &received); err != nil {
			t.Fatal(err)
		}
		if outcome != "applied" || typ != c.typ || pid != ids[i] || !received.Equal(b.clock.Now()) {
			t.Errorf("%s: recorded %s %s %d %s", c.typ, outcome, typ, pid, received)
		}
	}
}

// The same payment_intent.succeeded delivered 20 times concurrently: one
// transition, version + 1, one processed-event row; every delivery is 2xx.
func TestWebhookConcurrentRedeliveries(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.insertPayments(t, payrecon.StatusPending, intentID(1))
	payload := event("evt_dup", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, b.clock.Now())
	sig := stripesim.SignatureHeader(payload, secret, b.clock.Now())
	const n = 20
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		resps = make([]response, n)
	)
	for i := range n {
		wg.Go(func() {
			<-start
			resps[i] = b.post(t, payload, sig)
		})
	}
	close(start)
	wg.Wait()
	applied := 0
	for i, r := range resps {
		if r.status != http.StatusOK {
			t.Fatalf("delivery %d: status %d: %s", i, r.status, r.body)
		}
		body := r.json(t)
		switch {
		case body["duplicate"] == true && body["outcome"] == "applied":
		case body["duplicate"] == nil && body["outcome"] == "applied":
			applied++
		default:
			t.Errorf("delivery %d: answer %v", i, body)
		}
	}
	if applied != 1 {
		t.Errorf("%d deliveries applied the event, want 1", applied)
	}
	if p := b.payment(t, intentID(1)); p.status != payrecon.StatusPaid || p.version != 1 {
		t.Errorf("payment is %+v, want paid version 1", p)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events"); n != 1 {
		t.Errorf("%d processed-event rows, want 1", n)
	}
}

// Reordered delivery: succeeded, then a late payment_failed. The payment
// stays paid, and both events are recorded with what they did.
func TestWebhookOutOfOrderNeverMovesBackwards(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.insertPayments(t, payrecon.StatusPending, intentID(1))
	failedAt := b.clock.Now().Add(-time.Minute) // Stripe created it first
	ok := b.deliver(t, event("evt_ok", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, b.clock.Now()))
	late := b.deliver(t, event("evt_fail", payrecon.EventPaymentIntentPaymentFailed, intentID(1), payrecon.IntentRequiresPaymentMethod, failedAt))
	if ok.status != http.StatusOK || late.status != http.StatusOK {
		t.Fatalf("statuses %d, %d: %s %s", ok.status, late.status, ok.body, late.body)
	}
	if got := late.json(t)["outcome"]; got != string(payrecon.MovedElsewhere) {
		t.Errorf("late payment_failed outcome %v, want moved_elsewhere", got)
	}
	if p := b.payment(t, intentID(1)); p.status != payrecon.StatusPaid || p.version != 1 {
		t.Errorf("payment is %+v, want paid version 1", p)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events WHERE outcome IN ('applied', 'moved_elsewhere')"); n != 2 {
		t.Errorf("%d events recorded with their outcome, want 2", n)
	}
}

// An event type payrecon does not act on is answered 2xx and recorded,
// without touching any payment.
func TestWebhookRecordsOtherEventTypes(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.insertPayments(t, payrecon.StatusPending, intentID(1))
	before := b.payment(t, intentID(1))
	r := b.deliver(t, event("evt_created", "payment_intent.created", intentID(1), payrecon.IntentRequiresPaymentMethod, b.clock.Now()))
	if r.status != http.StatusOK || r.json(t)["outcome"] != "ignored" {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	charge := []byte(`{"id":"evt_charge","object":"event","type":"charge.refunded","created":1700000000,"data":{"object":{"id":"ch_1","object":"charge"}}}`)
	if r := b.deliver(t, charge); r.status != http.StatusOK || r.json(t)["outcome"] != "ignored" {
		t.Fatalf("charge.refunded: status %d: %s", r.status, r.body)
	}
	if p := b.payment(t, intentID(1)); p != before {
		t.Errorf("payment changed from %+v to %+v", before, p)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events WHERE outcome = 'ignored'"); n != 2 {
		t.Errorf("%d ignored events recorded, want 2", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events WHERE event_id = 'evt_charge' AND payment_intent_id IS NULL"); n != 1 {
		t.Error("a charge event was recorded with a PaymentIntent id")
	}
}

// An event for a PaymentIntent with no local row is recorded and becomes
// one missing_locally finding, however often such events arrive.
func TestWebhookMissingLocally(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	r := b.deliver(t, event("evt_orphan", payrecon.EventPaymentIntentSucceeded, "pi_nowhere", payrecon.IntentSucceeded, b.clock.Now()))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	body := r.json(t)
	if body["outcome"] != string(payrecon.PaymentMissing) || body["finding_id"] == nil {
		t.Errorf("answer %v, want payment_missing with a finding", body)
	}
	var (
		kind, verdict, local, external, reason, job string
		pid                                         *int64
		detected                                    time.Time
	)
	if err := b.pool.QueryRow(context.Background(), `SELECT kind, verdict, local_status, external_status, reason, job, payment_id, detected_at
		FROM reconciliation_findings WHERE stripe_payment_intent_id = 'pi_nowhere' AND resolved_at IS NULL`).
		Scan(&kind, &verdict, &local, &external, &reason, &job, &pid, &detected); err != nil {
		t.Fatalf("finding: %v", err)
	}
	if kind != "missing_locally" || verdict != "needs_review" || local != "(none)" || external != "succeeded" ||
		job != "webhook" || pid != nil || !strings.Contains(reason, "evt_orphan") || !detected.Equal(b.clock.Now()) {
		t.Errorf("finding %s %s %s %s %q %s %v %s", kind, verdict, local, external, reason, job, pid, detected)
	}
	// A second event about the same intent: recorded, no second finding.
	r = b.deliver(t, event("evt_orphan_2", payrecon.EventPaymentIntentCanceled, "pi_nowhere", payrecon.IntentCanceled, b.clock.Now()))
	if r.status != http.StatusOK || r.json(t)["finding_id"] != nil {
		t.Errorf("second event: %d %s", r.status, r.body)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings"); n != 1 {
		t.Errorf("%d findings, want 1", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events WHERE payment_intent_id = 'pi_nowhere' AND outcome = 'payment_missing'"); n != 2 {
		t.Errorf("%d events recorded, want 2", n)
	}
}

// End to end with the simulator as Stripe: signed deliveries, duplicated
// and reordered, every one answered 2xx, each payment moved once.
func TestWebhookFromSimulator(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	sim := simtest.Start(t, stripesim.Config{Clock: b.clock, Seed: 7})
	sim.SetWebhook(stripesim.WebhookConfig{URL: b.srv.URL + "/webhooks/stripe", Secret: secret, DuplicateRate: 0.5, Reorder: true})
	const n = 30
	intents := make([]string, n)
	for i := range intents {
		intents[i] = intentID(i)
		sim.Put(stripesim.Intent{ID: intents[i], Status: payrecon.IntentProcessing})
	}
	b.insertPayments(t, payrecon.StatusPending, intents...)
	for i, id := range intents {
		to := payrecon.IntentSucceeded
		if i%3 == 0 {
			to = payrecon.IntentCanceled
		}
		if _, err := sim.SetStatus(id, to); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := sim.DeliverPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, d := range ds {
		if !d.OK() {
			t.Errorf("delivery of %s: status %d, %v", d.EventID, d.StatusCode, d.Err)
		}
		if d.Duplicate {
			dups++
		}
	}
	if dups == 0 {
		t.Error("the simulator duplicated no delivery; the test proves nothing about redelivery")
	}
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE version = 1 AND status = CASE WHEN (substring(stripe_payment_intent_id from 9)::int % 3) = 0 THEN 'failed' ELSE 'paid' END"); got != n {
		t.Errorf("%d payments moved once to the right state, want %d", got, n)
	}
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events"); got != n {
		t.Errorf("%d events recorded, want %d", got, n)
	}
}
