package stripeapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// A connected account's session row is read with its Stripe-Account, as an
// intent row: the retrieve and the list both carry the header, the
// session's PaymentIntent comes expanded with its charge, and the session
// read as the platform is not found.
func TestSessionsOfAConnectedAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &headerRecorder{base: http.DefaultTransport}
	b := setup(t, stripesim.Config{}, func(c *stripeapi.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	if _, err := b.sim.CreateSession(stripesim.Session{ID: "cs_a", Account: "acct_A"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.sim.CompleteSession("cs_a", stripesim.Intent{Amount: 700}, false); err != nil {
		t.Fatal(err)
	}
	a := b.gw.ForAccount("acct_A", nil)
	s, err := a.RetrieveSession(ctx, "cs_a")
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != payrecon.SessionComplete || s.PaymentStatus != payrecon.SessionPaid || s.PaymentIntent == nil ||
		s.PaymentIntent.ID != s.PaymentIntentID || s.PaymentIntent.AmountReceived != 700 || !s.PaymentIntent.LatestCharge.Expanded() {
		t.Fatalf("retrieved %+v", s)
	}
	page, err := a.ListSessions(ctx, payrecon.ListQuery{})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].PaymentIntent == nil || !page.Sessions[0].PaymentIntent.LatestCharge.Expanded() {
		t.Fatalf("listed as acct_A: %+v, %v", page, err)
	}
	n := len(rec.seen)
	if _, err := b.gw.RetrieveSession(ctx, "cs_a"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Fatalf("acct_A's session read as the platform: %v, want not found", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, h := range rec.seen[:n] {
		if h != "acct_A" {
			t.Errorf("request %d of acct_A's gateway carried Stripe-Account %q", i, h)
		}
	}
	if rec.seen[n] != "" {
		t.Errorf("the platform's request carried Stripe-Account %q", rec.seen[n])
	}
}

// An empty session id is not found without a request; a session the
// server does not have is ErrNotFound.
func TestRetrieveSessionNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	if _, err := b.gw.RetrieveSession(context.Background(), ""); !errors.Is(err, payrecon.ErrNotFound) {
		t.Fatalf("empty id: %v", err)
	}
	if _, err := b.gw.RetrieveSession(context.Background(), "cs_missing"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}
