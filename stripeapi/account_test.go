package stripeapi_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// headerRecorder records the Stripe-Account header of every request.
type headerRecorder struct {
	mu   sync.Mutex
	seen []string
	base http.RoundTripper
}

func (h *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, req.Header.Get("Stripe-Account"))
	h.mu.Unlock()
	return h.base.RoundTrip(req)
}

// Every request of an account's gateway carries its Stripe-Account, and
// only its own; the platform's gateway sends none. A connected account's
// intent read as the platform (or as another account) is not found.
func TestForAccountSetsStripeAccountOnEveryRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rec := &headerRecorder{base: http.DefaultTransport}
	b := setup(t, stripesim.Config{}, func(c *stripeapi.Config) { c.HTTPClient = &http.Client{Transport: rec} })
	b.sim.Put(stripesim.Intent{ID: "pi_a", Account: "acct_A"})
	a := b.gw.ForAccount("acct_A", nil)
	if _, err := a.RetrieveIntent(ctx, "pi_a"); err != nil {
		t.Fatal(err)
	}
	if page, err := a.ListIntents(ctx, payrecon.ListQuery{}); err != nil || len(page.Intents) != 1 {
		t.Fatalf("list as acct_A: %+v, %v", page, err)
	}
	if _, err := a.ListEvents(ctx, payrecon.EventQuery{}); err != nil {
		t.Fatal(err)
	}
	if err := a.CheckAccess(ctx, stripeapi.AccessNeeds{Charges: true, Events: true}); err != nil {
		t.Fatal(err)
	}
	n := len(rec.seen)
	if _, err := b.gw.RetrieveIntent(ctx, "pi_a"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Fatalf("acct_A's intent read as the platform: %v, want not found", err)
	}
	if _, err := b.gw.ForAccount("acct_B", nil).RetrieveIntent(ctx, "pi_a"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Fatalf("acct_A's intent read as acct_B: %v, want not found", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, h := range rec.seen[:n] {
		if h != "acct_A" {
			t.Errorf("request %d of acct_A's gateway carried Stripe-Account %q", i, h)
		}
	}
	if got := rec.seen[n:]; len(got) != 2 || got[0] != "" || got[1] != "acct_B" {
		t.Errorf("the platform's and acct_B's requests carried %q", got)
	}
	if a.Account() != "acct_A" || b.gw.Account() != "" {
		t.Errorf("Account() = %q, %q", a.Account(), b.gw.Account())
	}
}

// A retry is a request at Stripe's side: it waits on the budget the call's
// context carries (budget.WithRetries), so a platform's --platform-rps
// holds under 429s. Held, the budget keeps the retry from being sent.
func TestRetriesSpendTheContextsBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	b.sim.Put(stripesim.Intent{ID: "pi_r", Status: payrecon.IntentSucceeded, Account: "acct_A"})
	gw := b.gw.ForAccount("acct_A", nil)
	lim := budget.NewLimiter(0)
	lim.Hold(time.Now().Add(time.Hour))
	b.sim.FailNext(stripesim.Failure{Status: http.StatusTooManyRequests})
	ctx, cancel := context.WithTimeout(budget.WithRetries(context.Background(), lim), 1500*time.Millisecond) // past the backoff (375 ms)
	defer cancel()
	if _, err := gw.RetrieveIntent(ctx, "pi_r"); err == nil {
		t.Fatal("the retry went out while its budget was held")
	}
	if n := b.sim.Stats().Requests[stripesim.EndpointRetrieveIntent]; n != 1 {
		t.Fatalf("%d requests reached Stripe, want 1 (the retry waits on the budget)", n)
	}
	lim.Hold(time.Time{})
	b.sim.FailNext(stripesim.Failure{Status: http.StatusTooManyRequests})
	if _, err := gw.RetrieveIntent(budget.WithRetries(context.Background(), lim), "pi_r"); err != nil {
		t.Fatalf("with the budget released, the retry succeeds: %v", err)
	}
}
