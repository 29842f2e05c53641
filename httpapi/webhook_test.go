package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"payrecon"
	"payrecon/httpapi"
	"payrecon/internal/pgtest"
	"payrecon/internal/testkit"
	"payrecon/postgres"
	"payrecon/stripesim"
)

func TestWebhookAppliesEachHandledEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	b := setup(t)
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
	b := setup(t)
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

// Every rejected request gets the right status, a message saying why, and
// changes nothing.
func TestWebhookRejections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.insertPayments(t, payrecon.StatusPending, intentID(1))
	now := b.clock.Now()
	good := event("evt_1", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, now)
	sign := func(p []byte, s string, at time.Time) string { return stripesim.SignatureHeader(p, s, at) }
	tampered := bytes.Replace(good, []byte(`"succeeded"`), []byte(`"canceled"`), 1)
	big := bytes.Repeat([]byte(" "), 65<<10)
	bigEvent := append(append([]byte{}, good[:len(good)-1]...), append([]byte(`,"padding":"`+string(big)+`"`), '}')...)
	noIntent := []byte(`{"id":"evt_2","object":"event","type":"payment_intent.succeeded","created":1,"data":{"object":{"object":"charge","id":"ch_1"}}}`)
	cases := []struct {
		name    string
		payload []byte
		sig     string
		status  int
		msg     string
	}{
		{"no signature header", good, "", http.StatusBadRequest, "missing Stripe-Signature"},
		{"malformed header", good, "garbage", http.StatusBadRequest, "malformed Stripe-Signature"},
		{"no v1 signature", good, fmt.Sprintf("t=%d,v0=abcd", now.Unix()), http.StatusBadRequest, "no valid signature"},
		{"bad signature (tampered body)", tampered, sign(good, secret, now), http.StatusBadRequest, "no valid signature"},
		{"wrong secret", good, sign(good, "whsec_someone_else", now), http.StatusBadRequest, "no valid signature"},
		{"stale timestamp", good, sign(good, secret, now.Add(-5*time.Minute-time.Second)), http.StatusBadRequest, "outside the tolerance"},
		{"timestamp from the future", good, sign(good, secret, now.Add(5*time.Minute+time.Second)), http.StatusBadRequest, "outside the tolerance"},
		{"signed at real time, not the clock", good, sign(good, secret, time.Now()), http.StatusBadRequest, "outside the tolerance"},
		{"two timestamps", good, sign(good, secret, now) + fmt.Sprintf(",t=%d", now.Unix()), http.StatusBadRequest, "malformed Stripe-Signature"},
		{"oversized body", bigEvent, sign(bigEvent, secret, now), http.StatusRequestEntityTooLarge, "exceeds the limit"},
		{"malformed JSON", []byte(`{"id": "evt_3", "object": "event",`), sign([]byte(`{"id": "evt_3", "object": "event",`), secret, now), http.StatusBadRequest, "malformed event JSON"},
		{"not an event", []byte(`{"id":"pi_1","object":"payment_intent"}`), sign([]byte(`{"id":"pi_1","object":"payment_intent"}`), secret, now), http.StatusBadRequest, "not a Stripe event"},
		{"handled type without a payment intent", noIntent, sign(noIntent, secret, now), http.StatusBadRequest, "without a payment_intent"},
	}
	before := b.snapshot(t)
	for _, c := range cases {
		r := b.post(t, c.payload, c.sig)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, r.status, c.status, r.body)
			continue
		}
		if msg, _ := r.json(t)["error"].(string); !strings.Contains(msg, c.msg) {
			t.Errorf("%s: error %q, want it to mention %q", c.name, msg, c.msg)
		}
	}
	if after := b.snapshot(t); after != before {
		t.Errorf("a rejected request changed the database:\nbefore %s\nafter  %s", before, after)
	}
	// Within the tolerance either way is accepted: the clock is the
	// injected one.
	if r := b.post(t, good, sign(good, secret, now.Add(-5*time.Minute))); r.status != http.StatusOK {
		t.Errorf("a delivery signed 5 minutes ago: status %d: %s", r.status, r.body)
	}
}

// An event type payrecon does not act on is answered 2xx and recorded,
// without touching any payment.
func TestWebhookRecordsOtherEventTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
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

// During a rotation both secrets are accepted, including Stripe's own
// rotation, where one header carries a signature per secret.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, oldSecret, secret)
	b.insertPayments(t, payrecon.StatusPending, intentID(1), intentID(2), intentID(3))
	now := b.clock.Now()
	p1 := event("evt_old", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, now)
	p2 := event("evt_new", payrecon.EventPaymentIntentSucceeded, intentID(2), payrecon.IntentSucceeded, now)
	p3 := event("evt_both", payrecon.EventPaymentIntentSucceeded, intentID(3), payrecon.IntentSucceeded, now)
	unknown := stripesim.SignatureHeader(p3, "whsec_unknown", now)
	both := unknown + "," + strings.Split(stripesim.SignatureHeader(p3, secret, now), ",")[1]
	for name, r := range map[string]response{
		"old secret":            b.post(t, p1, stripesim.SignatureHeader(p1, oldSecret, now)),
		"new secret":            b.post(t, p2, stripesim.SignatureHeader(p2, secret, now)),
		"one of two signatures": b.post(t, p3, both),
	} {
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d: %s", name, r.status, r.body)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1"); n != 3 {
		t.Errorf("%d payments paid, want 3", n)
	}
}

// An event for a PaymentIntent with no local row is recorded and becomes
// one missing_locally finding, however often such events arrive.
func TestWebhookMissingLocally(t *testing.T) {
	t.Parallel()
	b := setup(t)
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

// Database trouble is 5xx, so Stripe retries; nothing is half-written.
func TestWebhookDatabaseDown(t *testing.T) {
	t.Parallel()
	closed := pgtest.NewDB(t)
	closed.Close()
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = "payrecon_no_such_database"
	gone, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gone.Close)
	for name, db := range map[string]httpapi.DB{"closed pool": closed, "missing database": gone} {
		b := &testBundle{clock: testkit.NewClock(time.Now())}
		b.serve(t, httpapi.Deps{Clock: b.clock, DB: db, Writer: postgres.NewWriter(nil),
			Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
		r := b.deliver(t, event("evt_1", payrecon.EventPaymentIntentSucceeded, "pi_1", payrecon.IntentSucceeded, b.clock.Now()))
		if r.status != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503: %s", name, r.status, r.body)
		}
		if msg, _ := r.json(t)["error"].(string); !strings.Contains(msg, "retry") {
			t.Errorf("%s: error %q", name, msg)
		}
	}
}

// A webhook without its database refuses events loudly (500) rather than
// accepting and dropping them; a stray empty secret is a configuration
// error; without any secret there is no webhook route.
func TestWebhookNotConfigured(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		deps   httpapi.Deps
		valid  bool
		status int
	}{
		"no database":  {httpapi.Deps{Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}}, false, http.StatusInternalServerError},
		"empty secret": {httpapi.Deps{Writer: postgres.NewWriter(nil), Webhook: httpapi.WebhookConfig{Secrets: []string{""}}}, false, http.StatusNotFound},
		"no secret":    {httpapi.Deps{}, true, http.StatusNotFound},
	} {
		if err := c.deps.Validate(); (err == nil) != c.valid {
			t.Errorf("%s: Validate = %v", name, err)
		}
		b := &testBundle{clock: testkit.NewClock(time.Now())}
		b.serve(t, c.deps)
		r := b.deliver(t, event("evt_1", payrecon.EventPaymentIntentSucceeded, "pi_1", payrecon.IntentSucceeded, b.clock.Now()))
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", name, r.status, c.status, r.body)
		}
	}
}

// The two listeners: the public one has the webhook and health only, even
// when it is handed the admin handlers; the admin one has health, metrics,
// the console and the queue dashboard, and no webhook.
func TestRoutes(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	admin := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(name + " " + r.URL.Path)) })
	}
	plain := &testBundle{}
	plain.serve(t, httpapi.Deps{DB: pool, Writer: postgres.NewWriter(nil), Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
	full := httpapi.Deps{DB: pool, Writer: postgres.NewWriter(nil), Webhook: httpapi.WebhookConfig{Secrets: []string{secret}},
		Ready: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}),
		Metrics:     http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("payrecon_up 1\n")) }),
		Queue:       admin("queue"),
		QueuePrefix: "/riverui",
		Console:     admin("console"),
	}
	public := &testBundle{}
	public.serve(t, full)
	adm := &testBundle{}
	adm.serveHandler(t, httpapi.NewAdminServer(full))
	get := func(b *testBundle, method, path string) response {
		req, err := http.NewRequest(method, b.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b.do(t, req)
	}
	for _, c := range []struct {
		name         string
		b            *testBundle
		method, path string
		status       int
		body         string
	}{
		{"plain", plain, http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"plain", plain, http.MethodHead, "/healthz", http.StatusOK, ""},
		{"plain", plain, http.MethodPost, "/healthz", http.StatusMethodNotAllowed, ""},
		{"plain", plain, http.MethodGet, "/webhooks/stripe", http.StatusMethodNotAllowed, ""},
		{"plain", plain, http.MethodGet, "/readyz", http.StatusNotFound, ""},
		{"plain", plain, http.MethodGet, "/metrics", http.StatusNotFound, ""},
		{"plain", plain, http.MethodGet, "/", http.StatusNotFound, ""},
		{"public", public, http.MethodGet, "/readyz", http.StatusServiceUnavailable, ""},
		{"public", public, http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"public", public, http.MethodGet, "/metrics", http.StatusNotFound, ""},
		{"public", public, http.MethodGet, "/riverui/", http.StatusNotFound, ""},
		{"public", public, http.MethodPut, "/riverui/api/queues/repairs/pause", http.StatusNotFound, ""},
		{"public", public, http.MethodGet, "/console/", http.StatusNotFound, ""},
		{"admin", adm, http.MethodGet, "/readyz", http.StatusServiceUnavailable, ""},
		{"admin", adm, http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{"admin", adm, http.MethodGet, "/metrics", http.StatusOK, "payrecon_up 1\n"},
		{"admin", adm, http.MethodGet, "/riverui/jobs", http.StatusOK, "queue /riverui/jobs"},
		{"admin", adm, http.MethodGet, "/console/findings", http.StatusOK, "console /console/findings"},
		{"admin", adm, http.MethodPost, "/webhooks/stripe", http.StatusNotFound, ""},
	} {
		r := get(c.b, c.method, c.path)
		if r.status != c.status || (c.body != "" && string(r.body) != c.body) {
			t.Errorf("%s: %s %s = %d %q, want %d %q", c.name, c.method, c.path, r.status, r.body, c.status, c.body)
		}
	}
}

// End to end with the simulator as Stripe: signed deliveries, duplicated
// and reordered, every one answered 2xx, each payment moved once.
func TestWebhookFromSimulator(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := stripesim.StartTest(t, stripesim.Config{Clock: b.clock, Seed: 7})
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
