package stripeapi_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"payrecon"
	"payrecon/internal/simtest"
	"payrecon/stripeapi"
	"payrecon/stripesim"
)

// contractTarget is a server speaking Stripe's API: the simulator or
// stripe-mock.
type contractTarget struct {
	url    string
	key    string // a key the server accepts
	badKey string // a key the server rejects with 401
	id     string // an intent id the server knows
}

// runContract is the one set of assertions both targets must pass: the
// requests the gateway sends are accepted and the answers parse.
func runContract(t *testing.T, tgt contractTarget) {
	gateway := func(t *testing.T, key string) *stripeapi.Gateway {
		gw, err := stripeapi.New(stripeapi.Config{SecretKey: key, APIBase: tgt.url, HTTPClient: newClient(t), MaxRetries: -1})
		if err != nil {
			t.Fatal(err)
		}
		return gw
	}
	checkIntent := func(t *testing.T, in payrecon.Intent) {
		t.Helper()
		if !strings.HasPrefix(in.ID, "pi_") || !in.Status.Known() || in.Created.IsZero() || in.Created.Unix() <= 0 {
			t.Errorf("intent %+v does not parse as a PaymentIntent", in)
		}
	}
	ctx := context.Background()

	t.Run("retrieve", func(t *testing.T) {
		t.Parallel()
		in, err := gateway(t, tgt.key).RetrieveIntent(ctx, tgt.id)
		if err != nil {
			t.Fatal(err)
		}
		checkIntent(t, in)
		if in.ID != tgt.id {
			t.Errorf("retrieved %q, asked for %q", in.ID, tgt.id)
		}
	})

	t.Run("list one page", func(t *testing.T) {
		t.Parallel()
		page, err := gateway(t, tgt.key).ListIntents(ctx, payrecon.ListQuery{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Intents) == 0 || len(page.Intents) > 3 {
			t.Fatalf("%d intents on a page of 3", len(page.Intents))
		}
		for _, in := range page.Intents {
			checkIntent(t, in)
		}
	})

	t.Run("list with every parameter", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		_, err := gateway(t, tgt.key).ListIntents(ctx, payrecon.ListQuery{
			CreatedGTE:    now.Add(-365 * 24 * time.Hour),
			CreatedLTE:    now,
			StartingAfter: tgt.id,
			Limit:         100,
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("rejected key", func(t *testing.T) {
		t.Parallel()
		_, err := gateway(t, tgt.badKey).RetrieveIntent(ctx, tgt.id)
		if c := configError(t, err); c.StatusCode != 401 {
			t.Fatalf("%+v", c)
		}
		if strings.Contains(err.Error(), tgt.badKey) {
			t.Errorf("error shows the key: %v", err)
		}
	})
}

func TestContractSimulator(t *testing.T) {
	t.Parallel()
	sim := simtest.Start(t, stripesim.Config{})
	for i, st := range payrecon.StripeStatuses {
		sim.Put(stripesim.Intent{Status: st, Created: time.Now().Add(-time.Duration(i) * time.Hour)})
	}
	known := sim.Put(stripesim.Intent{ID: "pi_contract", Created: time.Now().Add(-time.Minute)})
	runContract(t, contractTarget{url: sim.URL(), key: sim.SecretKey(), badKey: "sk_test_rejected", id: known.ID})
}

// TestContractStripeMock runs the contract against stripe-mock at
// STRIPE_MOCK_URL. It skips when that is unset, unless
// PAYRECON_REQUIRE_STRIPE_MOCK=1 (as in CI), when it fails instead.
func TestContractStripeMock(t *testing.T) {
	t.Parallel()
	url := os.Getenv("STRIPE_MOCK_URL")
	if url == "" {
		if os.Getenv("PAYRECON_REQUIRE_STRIPE_MOCK") == "1" {
			t.Fatal("STRIPE_MOCK_URL is not set and PAYRECON_REQUIRE_STRIPE_MOCK=1: start stripe-mock and point STRIPE_MOCK_URL at it")
		}
		t.Skip("STRIPE_MOCK_URL is not set")
	}
	// stripe-mock accepts any key shaped like a test secret key, echoes the
	// requested id and answers fixtures (it never 404s).
	runContract(t, contractTarget{url: url, key: "sk_test_123", badKey: "not_a_key", id: "pi_contract"})
}
