package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	secret    = "whsec_test_current"
	oldSecret = "whsec_test_previous"
)

type testBundle struct {
	events *recorder
	clock  *testkit.Clock
	srv    *httptest.Server
	client *http.Client
}

// recorder is the event processor of the handler tests: it records the
// events it is handed (the database's side of the webhook is tested in
// postgres, through this same handler) and answers with err when set.
type recorder struct {
	mu     sync.Mutex
	events []payrecon.Event
	err    error
}

func (r *recorder) ProcessEvent(_ context.Context, ev payrecon.Event) (payrecon.EventResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return payrecon.EventResult{}, r.err
	}
	r.events = append(r.events, ev)
	return payrecon.EventResult{EventID: ev.ID, Outcome: string(payrecon.Applied), PaymentID: int64(len(r.events))}, nil
}

func (r *recorder) got() []payrecon.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]payrecon.Event(nil), r.events...)
}

// setup serves the API on a real listener with the given signing secrets
// (secret when none) and a fake clock far from real time, so a check
// against time.Now instead of the injected clock fails.
func setup(t *testing.T, secrets ...string) *testBundle {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	b := &testBundle{events: &recorder{}, clock: testkit.NewClock(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))}
	b.serve(t, httpapi.Deps{
		Clock:   b.clock,
		Events:  b.events,
		Webhook: httpapi.WebhookConfig{Secrets: secrets, MaxBodyBytes: 64 << 10},
	})
	return b
}

// serve starts a public server for deps and a client of the test's own.
func (b *testBundle) serve(t *testing.T, deps httpapi.Deps) {
	t.Helper()
	b.serveHandler(t, httpapi.NewServer(deps))
}

// serveHandler starts a server for h and a client of the test's own.
func (b *testBundle) serveHandler(t *testing.T, h http.Handler) {
	t.Helper()
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	b.client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// event renders a Stripe event about a PaymentIntent, with an API version
// older than stripe-go's (any version must be accepted).
func event(id, typ, intentID string, status payrecon.StripeStatus, created time.Time) []byte {
	b, err := json.Marshal(map[string]any{
		"id":               id,
		"object":           "event",
		"api_version":      "2019-02-19",
		"created":          created.Unix(),
		"livemode":         false,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": nil, "idempotency_key": nil},
		"type":             typ,
		"data": map[string]any{"object": map[string]any{
			"id": intentID, "object": "payment_intent", "status": string(status),
			"amount": 1000, "currency": "usd", "metadata": map[string]string{"order": "o1"},
		}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

type response struct {
	status int
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return m
}

// post delivers payload with the given Stripe-Signature header ("" for none).
func (b *testBundle) post(t *testing.T, payload []byte, sig string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+"/webhooks/stripe", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	return b.do(t, req)
}

// deliver signs payload with secret at the clock's now and posts it.
func (b *testBundle) deliver(t *testing.T, payload []byte) response {
	t.Helper()
	return b.post(t, payload, stripesim.SignatureHeader(payload, secret, b.clock.Now()))
}

func (b *testBundle) do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, body: body}
}

func intentID(n int) string { return fmt.Sprintf("pi_test_%04d", n) }
