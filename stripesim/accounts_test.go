package stripesim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

// Intents of a connected account are read, listed and have their events
// listed only under its Stripe-Account header; under any other (or none)
// they are 404, and the simulator counts each such read.
func TestConnectedAccountsAreScopedByStripeAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	b.sim.Put(stripesim.Intent{ID: "pi_plat", Created: at})
	b.sim.Put(stripesim.Intent{ID: "pi_a", Account: "acct_A", Created: at})
	b.sim.Put(stripesim.Intent{ID: "pi_b", Account: "acct_B", Created: at})
	key := "Bearer " + b.sim.SecretKey()
	for _, c := range []struct {
		id, account string
		status      int
	}{
		{"pi_plat", "", http.StatusOK}, {"pi_a", "acct_A", http.StatusOK}, {"pi_b", "acct_B", http.StatusOK},
		{"pi_a", "", http.StatusNotFound}, {"pi_a", "acct_B", http.StatusNotFound}, {"pi_plat", "acct_A", http.StatusNotFound},
	} {
		if r := b.getAs(t, "/v1/payment_intents/"+c.id, key, c.account); r.status != c.status {
			t.Errorf("%s as %q: %d, want %d", c.id, c.account, r.status, c.status)
		}
	}
	if n := b.sim.Stats().WrongAccount; n != 3 {
		t.Errorf("WrongAccount = %d, want 3", n)
	}
	for account, want := range map[string]string{"": "pi_plat", "acct_A": "pi_a", "acct_B": "pi_b"} {
		r := b.getAs(t, "/v1/payment_intents?limit=100", key, account)
		data, _ := r.object(t)["data"].([]any)
		if len(data) != 1 || data[0].(map[string]any)["id"] != want {
			t.Errorf("list as %q: %s", account, r.body)
		}
	}
	if _, err := b.sim.SetStatus("pi_a", payrecon.IntentSucceeded); err != nil {
		t.Fatal(err)
	}
	r := b.getAs(t, "/v1/events", key, "acct_A")
	data, _ := r.object(t)["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["account"] != "acct_A" {
		t.Errorf("events as acct_A: %s", r.body)
	}
	for _, account := range []string{"", "acct_B"} {
		r := b.getAs(t, "/v1/events", key, account)
		if data, _ := r.object(t)["data"].([]any); len(data) != 0 {
			t.Errorf("events as %q list acct_A's: %s", account, r.body)
		}
	}
}

// With PerAccount, each account has its own bucket: one account's 429s do
// not limit another's.
func TestRateLimitPerAccount(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{RateLimit: stripesim.RateLimit{PerSecond: 1, Burst: 1, PerAccount: true}}})
	b.sim.Put(stripesim.Intent{ID: "pi_a", Account: "acct_A"})
	b.sim.Put(stripesim.Intent{ID: "pi_b", Account: "acct_B"})
	key := "Bearer " + b.sim.SecretKey()
	if r := b.getAs(t, "/v1/payment_intents/pi_a", key, "acct_A"); r.status != http.StatusOK {
		t.Fatalf("first of A: %d", r.status)
	}
	if r := b.getAs(t, "/v1/payment_intents/pi_a", key, "acct_A"); r.status != http.StatusTooManyRequests {
		t.Fatalf("second of A: %d, want 429", r.status)
	}
	if r := b.getAs(t, "/v1/payment_intents/pi_b", key, "acct_B"); r.status != http.StatusOK {
		t.Fatalf("first of B after A was limited: %d", r.status)
	}
}

// With PerAccount and Accounts, only those accounts are limited.
func TestRateLimitOnlySomeAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{RateLimit: stripesim.RateLimit{PerSecond: 1, Burst: 1, PerAccount: true,
		Accounts: []string{"acct_A"}}}})
	b.sim.Put(stripesim.Intent{ID: "pi_a", Account: "acct_A"})
	b.sim.Put(stripesim.Intent{ID: "pi_b", Account: "acct_B"})
	key := "Bearer " + b.sim.SecretKey()
	for i := range 3 {
		if r := b.getAs(t, "/v1/payment_intents/pi_b", key, "acct_B"); r.status != http.StatusOK {
			t.Fatalf("request %d of B: %d, want 200 (B is not limited)", i, r.status)
		}
	}
	if r := b.getAs(t, "/v1/payment_intents/pi_a", key, "acct_A"); r.status != http.StatusOK {
		t.Fatalf("first of A: %d", r.status)
	}
	r := b.getAs(t, "/v1/payment_intents/pi_a", key, "acct_A")
	if r.status != http.StatusTooManyRequests || r.header.Get("Stripe-Rate-Limited-Reason") == "" {
		t.Fatalf("second of A: %d (reason %q), want 429 with Stripe-Rate-Limited-Reason", r.status, r.header.Get("Stripe-Rate-Limited-Reason"))
	}
}
