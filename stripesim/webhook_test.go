package stripesim_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

const whSecret = "whsec_test_secret"

// receiver is a webhook endpoint that verifies signatures with stripe-go.
type receiver struct {
	mu       sync.Mutex
	received []string // event ids, in arrival order
	errs     []error
	status   int
}

func newReceiver(t *testing.T) (*receiver, string) {
	rc := &receiver{status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload, _ := io.ReadAll(r.Body)
		ev, err := webhook.ConstructEventWithOptions(payload, r.Header.Get("Stripe-Signature"), whSecret, webhook.ConstructEventOptions{})
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err != nil {
			rc.errs = append(rc.errs, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.received = append(rc.received, ev.ID)
		w.WriteHeader(rc.status)
	}))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *receiver) snapshot() ([]string, []error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.received), slices.Clone(rc.errs)
}

// setupEvents starts a simulator on the real clock (signatures are checked
// against real time) with n succeeded intents, one event each.
func setupEvents(t *testing.T, cfg stripesim.Config, n int) (*testBundle, []string) {
	cfg.Clock = payrecon.SystemClock{}
	b := setup(t, cfg)
	var ids []string
	for i := range n {
		id := "pi_" + string(rune('a'+i))
		b.sim.Put(stripesim.Intent{ID: id})
		ev, err := b.sim.SetStatus(id, payrecon.IntentSucceeded)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev)
	}
	return b, ids
}

func TestWebhookSignaturesVerify(t *testing.T) {
	t.Parallel()
	rc, url := newReceiver(t)
	b, events := setupEvents(t, stripesim.Config{Webhook: stripesim.WebhookConfig{URL: url, Secret: whSecret}}, 3)

	ds, err := b.sim.DeliverPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, errs := rc.snapshot()
	if len(errs) > 0 || !slices.Equal(got, events) || len(ds) != 3 {
		t.Fatalf("received %v (errors %v), want %v", got, errs, events)
	}
	for _, d := range ds {
		if !d.OK() {
			t.Errorf("delivery %+v", d)
		}
	}
	if ds, err := b.sim.DeliverPending(context.Background()); err != nil || len(ds) != 0 {
		t.Fatalf("second DeliverPending: %v %v", ds, err)
	}
	if l := b.get(t, "/v1/events?delivery_success=false").list(t); len(l.Data) != 0 {
		t.Errorf("undelivered after success: %v", l.ids(t))
	}
	if l := b.get(t, "/v1/events?delivery_success=true").list(t); len(l.Data) != 3 {
		t.Errorf("delivered: %v", l.ids(t))
	}

	// The header is exactly Stripe's: t=<unix>,v1=<hex hmac>.
	payload, err := b.sim.EventPayload(events[0])
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	want := "t=1700000000,v1=" + hexHMAC(at, payload)
	if h := stripesim.SignatureHeader(payload, whSecret, at); h != want {
		t.Errorf("header %q, want %q", h, want)
	}
}

func hexHMAC(at time.Time, payload []byte) string {
	const hexdigits = "0123456789abcdef"
	sum := webhook.ComputeSignature(at, payload, whSecret)
	out := make([]byte, 0, 2*len(sum))
	for _, c := range sum {
		out = append(out, hexdigits[c>>4], hexdigits[c&15])
	}
	return string(out)
}

func TestWebhookStaleSignature(t *testing.T) {
	t.Parallel()
	rc, url := newReceiver(t)
	b, events := setupEvents(t, stripesim.Config{}, 1)
	b.sim.SetWebhook(stripesim.WebhookConfig{URL: url, Secret: whSecret, SignedAt: time.Now().Add(-10 * time.Minute)})
	ds, err := b.sim.DeliverPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, errs := rc.snapshot()
	if len(errs) != 1 || !errors.Is(errs[0], webhook.ErrTooOld) {
		t.Fatalf("verification errors %v, want ErrTooOld", errs)
	}
	if len(ds) != 1 || ds[0].OK() || ds[0].StatusCode != http.StatusBadRequest {
		t.Fatalf("deliveries %+v", ds)
	}
	l := b.get(t, "/v1/events?delivery_success=false").list(t)
	if got := l.ids(t); !slices.Equal(got, events) {
		t.Fatalf("undelivered %v, want %v", got, events)
	}
}

func TestWebhookDropDuplicateReorder(t *testing.T) {
	t.Parallel()
	run := func(hook stripesim.WebhookConfig) ([]string, []stripesim.Delivery, *testBundle, []string) {
		rc, url := newReceiver(t)
		hook.URL, hook.Secret = url, whSecret
		b, events := setupEvents(t, stripesim.Config{Seed: 42, Webhook: hook}, 12)
		ds, err := b.sim.DeliverPending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, errs := rc.snapshot()
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return got, ds, b, events
	}

	// Reorder: a permutation, the same for the same seed, not the original.
	got, _, _, events := run(stripesim.WebhookConfig{Reorder: true})
	again, _, _, _ := run(stripesim.WebhookConfig{Reorder: true})
	if !slices.Equal(got, again) {
		t.Errorf("reorder with one seed differs: %v vs %v", got, again)
	}
	if slices.Equal(got, events) || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(events))) {
		t.Errorf("reordered %v from %v", got, events)
	}

	// Duplicate: every event twice, back to back.
	got, ds, _, events := run(stripesim.WebhookConfig{DuplicateRate: 1})
	if len(got) != 24 || len(ds) != 24 {
		t.Fatalf("duplicates: %d received, %d deliveries", len(got), len(ds))
	}
	for i, id := range events {
		if got[2*i] != id || got[2*i+1] != id || !ds[2*i+1].Duplicate {
			t.Fatalf("duplicate %d: %v", i, got)
		}
	}

	// Drop: dropped events are reported undelivered, then RetryFailed sends them.
	got, ds, b, _ := run(stripesim.WebhookConfig{DropRate: 0.5})
	var dropped []string
	for _, d := range ds {
		if d.Dropped {
			dropped = append(dropped, d.EventID)
		}
	}
	if len(dropped) == 0 || len(got) == 0 || len(got)+len(dropped) != 12 {
		t.Fatalf("drop 0.5: %d received, %d dropped", len(got), len(dropped))
	}
	l := b.get(t, "/v1/events?limit=100&delivery_success=false").list(t)
	if undelivered := l.ids(t); !slices.Equal(slices.Sorted(slices.Values(undelivered)), slices.Sorted(slices.Values(dropped))) {
		t.Fatalf("delivery_success=false %v, dropped %v", undelivered, dropped)
	}
	b.sim.SetWebhook(stripesim.WebhookConfig{URL: "http://127.0.0.1:1", Secret: whSecret}) // refused
	ds, err := b.sim.RetryFailed(context.Background())
	if err != nil || len(ds) != len(dropped) || ds[0].Err == nil {
		t.Fatalf("retry to a closed port: %+v %v", ds, err)
	}
	for _, e := range b.sim.Events() {
		if slices.Contains(dropped, e.ID) && (e.Attempts != 2 || e.Delivered) {
			t.Errorf("event after two failed attempts: %+v", e)
		}
	}
}

func TestWebhookWithoutEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	if _, err := b.sim.DeliverPending(context.Background()); !errors.Is(err, stripesim.ErrNoWebhook) {
		t.Fatalf("got %v", err)
	}
}
