package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/internal/webhooktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	secret    = webhooktest.Secret
	oldSecret = webhooktest.OldSecret
)

type testBundle struct {
	events *recorder
	clock  *testkit.Clock
	srv    *webhooktest.Server
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
	b.srv = webhooktest.Serve(t, h)
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
func (b *testBundle) post(t *testing.T, payload []byte, sig string) response {
	t.Helper()
	status, body := b.srv.Post(t, payload, sig)
	return response{status, body}
}

// deliver signs payload with secret at the clock's now and posts it.
func (b *testBundle) deliver(t *testing.T, payload []byte) response {
	t.Helper()
	status, body := b.srv.Deliver(t, payload, b.clock.Now())
	return response{status, body}
}

func (b *testBundle) do(t *testing.T, req *http.Request) response {
	t.Helper()
	status, body := b.srv.Do(t, req)
	return response{status, body}
}

func intentID(n int) string { return webhooktest.IntentID(n) }
