package httpapi_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// A verified delivery reaches the processor parsed: the fields every road
// shares, and the processor's answer is the response.
func TestWebhookHandsTheParsedEventToTheProcessor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	created := b.clock.Now().Add(-time.Minute)
	r := b.deliver(t, event("evt_1", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, created))
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if got := r.json(t); got["event_id"] != "evt_1" || got["outcome"] != "applied" || got["payment_id"] != float64(1) {
		t.Errorf("answer %v", got)
	}
	got := b.events.got()
	want := payrecon.Event{ID: "evt_1", Type: payrecon.EventPaymentIntentSucceeded, APIVersion: "2019-02-19",
		Created: created.UTC().Truncate(time.Second),
		Object:  payrecon.EventObject{ID: intentID(1), Object: "payment_intent", Status: "succeeded", Amount: 1000, Currency: "usd"}}
	if len(got) != 1 || got[0] != want {
		t.Errorf("processor got %+v, want [%+v]", got, want)
	}
}

// Every rejected request gets the right status, a message saying why, and
// changes nothing.
func TestWebhookRejections(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.clock.Now()
	good := event("evt_1", payrecon.EventPaymentIntentSucceeded, intentID(1), payrecon.IntentSucceeded, now)
	sign := func(p []byte, s string, at time.Time) string { return stripesim.SignatureHeader(p, s, at) }
	tampered := bytes.Replace(good, []byte(`"succeeded"`), []byte(`"canceled"`), 1)
	big := bytes.Repeat([]byte(" "), 65<<10)
	bigEvent := append(append([]byte{}, good[:len(good)-1]...), append([]byte(`,"padding":"`+string(big)+`"`), '}')...)
	noIntent := []byte(`{"id":"evt_2","object":"event","type":"payment_intent.succeeded","created":1,"data":{"object":{"object":"charge","id":"ch_1"}}}`)
	nulID := []byte(`{"id":"evt_\u0000x","object":"event","type":"payment_intent.created","created":1,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
	hugeID := []byte(`{"id":"evt_` + strings.Repeat("x", 40<<10) + `","object":"event","type":"payment_intent.created","created":1,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
	farFuture := []byte(`{"id":"evt_9","object":"event","type":"payment_intent.created","created":9223372036854775807,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
	negative := []byte(`{"id":"evt_9","object":"event","type":"payment_intent.created","created":-5,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
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
		{"malformed JSON", []byte(`{"id": "evt_3", "object": "event",`), sign([]byte(`{"id": "evt_3", "object": "event",`), secret, now), http.StatusBadRequest, "not JSON of a Stripe event"},
		{"not an event", []byte(`{"id":"pi_1","object":"payment_intent"}`), sign([]byte(`{"id":"pi_1","object":"payment_intent"}`), secret, now), http.StatusBadRequest, "not a Stripe event"},
		{"handled type without a payment intent", noIntent, sign(noIntent, secret, now), http.StatusBadRequest, "without a payment_intent"},
		{"NUL byte in the id", nulID, sign(nulID, secret, now), http.StatusBadRequest, "control or invalid character"},
		{"a 40 KB id", hugeID, sign(hugeID, secret, now), http.StatusBadRequest, "bytes long"},
		{"created past year 9999", farFuture, sign(farFuture, secret, now), http.StatusBadRequest, "is not a time"},
		{"negative created", negative, sign(negative, secret, now), http.StatusBadRequest, "is not a time"},
	}
	for _, c := range cases {
		r := b.post(t, c.payload, c.sig)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d (%s)", c.name, r.status, c.status, r.body)
			continue
		}
		msg, _ := r.json(t)["error"].(string)
		if !strings.Contains(msg, c.msg) {
			t.Errorf("%s: error %q, want it to mention %q", c.name, msg, c.msg)
		}
		if len(msg) > 300 {
			t.Errorf("%s: error is %d bytes long: a message must not echo the payload", c.name, len(msg))
		}
	}
	if got := b.events.got(); len(got) != 0 {
		t.Errorf("rejected requests reached the event processor: %+v", got)
	}
	// Within the tolerance either way is accepted: the clock is the
	// injected one.
	if r := b.post(t, good, sign(good, secret, now.Add(-5*time.Minute))); r.status != http.StatusOK {
		t.Errorf("a delivery signed 5 minutes ago: status %d: %s", r.status, r.body)
	}
}

// During a rotation both secrets are accepted, including Stripe's own
// rotation, where one header carries a signature per secret.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, oldSecret, secret)
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
	if got := b.events.got(); len(got) != 3 {
		t.Errorf("%d events processed, want 3", len(got))
	}
}

// A signed event with a 400 KB id (under the default body cap) is refused
// with 400, not retried by Stripe for three days, and is never echoed whole.
func TestWebhookHugeIDUnderTheDefaultCap(t *testing.T) {
	t.Parallel()
	b := &testBundle{events: &recorder{}, clock: testkit.NewClock(time.Now())}
	b.serve(t, httpapi.Deps{Clock: b.clock, Events: b.events, Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
	huge := []byte(`{"id":"evt_` + strings.Repeat("x", 400<<10) + `","object":"event","type":"payment_intent.created","created":1,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)
	r := b.deliver(t, huge)
	if r.status != http.StatusBadRequest || len(r.body) > 300 {
		t.Errorf("status %d, %d-byte answer; want 400 and a short one", r.status, len(r.body))
	}
	if len(b.events.got()) != 0 {
		t.Error("the event reached the processor")
	}
}

// When the event cannot be recorded the answer is 503, so Stripe retries.
func TestWebhookProcessorFails(t *testing.T) {
	t.Parallel()
	b := &testBundle{events: &recorder{err: errors.New("connection refused")}, clock: testkit.NewClock(time.Now())}
	b.serve(t, httpapi.Deps{Clock: b.clock, Events: b.events, Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
	r := b.deliver(t, event("evt_1", payrecon.EventPaymentIntentSucceeded, "pi_1", payrecon.IntentSucceeded, b.clock.Now()))
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503: %s", r.status, r.body)
	}
	if msg, _ := r.json(t)["error"].(string); !strings.Contains(msg, "retry") {
		t.Errorf("error %q", msg)
	}
}

// A webhook without its event processor refuses events loudly (500) rather than
// accepting and dropping them; a stray empty secret is a configuration
// error; without any secret there is no webhook route.
func TestWebhookNotConfigured(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		deps   httpapi.Deps
		valid  bool
		status int
	}{
		"no processor": {httpapi.Deps{Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}}, false, http.StatusInternalServerError},
		"empty secret": {httpapi.Deps{Events: &recorder{}, Webhook: httpapi.WebhookConfig{Secrets: []string{""}}}, false, http.StatusNotFound},
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
	admin := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(name + " " + r.URL.Path)) })
	}
	plain := &testBundle{}
	plain.serve(t, httpapi.Deps{Events: &recorder{}, Webhook: httpapi.WebhookConfig{Secrets: []string{secret}}})
	full := httpapi.Deps{Events: &recorder{}, Webhook: httpapi.WebhookConfig{Secrets: []string{secret}},
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
