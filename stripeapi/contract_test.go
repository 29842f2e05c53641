package stripeapi_test

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// contractTarget is a server speaking Stripe's API: the simulator or
// stripe-mock.
type contractTarget struct {
	url    string
	key    string // a key the server accepts
	badKey string // a key the server rejects with 401
	id     string // an intent id the server knows, with a charge
	event  string // an event id the server knows
	// account is a connected account, and accountIntent an intent the
	// server knows on it (read with Stripe-Account).
	account, accountIntent string
	// session is a Checkout Session the server knows; paid says it has a
	// PaymentIntent with a charge (the simulator's does).
	session string
	paid    bool
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
		if !strings.HasPrefix(in.ID, "pi_") || !in.Status.Valid() || in.Created.IsZero() || in.Created.Unix() <= 0 ||
			in.Amount <= 0 || in.Currency == "" || in.Metadata == nil {
			t.Errorf("intent %+v does not parse as a PaymentIntent", in)
		}
		if c := in.LatestCharge; c != nil && !c.Expanded() {
			t.Errorf("intent %s: latest charge %+v came back as an id, not expanded", in.ID, *c)
		}
	}
	// checkCharge asserts the charge was expanded and parsed.
	checkCharge := func(t *testing.T, in payrecon.Intent) {
		t.Helper()
		c := in.LatestCharge
		if c == nil {
			t.Fatalf("intent %s: no latest charge", in.ID)
		}
		if !strings.HasPrefix(c.ID, "ch_") || !c.Expanded() || c.Created.Unix() <= 0 || c.Currency == "" ||
			c.AmountCaptured < 0 || c.AmountRefunded < 0 || c.AmountRefunded > max(c.AmountCaptured, in.Amount) {
			t.Errorf("intent %s: charge %+v does not parse as an expanded Charge", in.ID, *c)
		}
	}
	checkEvents := func(t *testing.T, page payrecon.EventPage) {
		t.Helper()
		for _, e := range page.Events {
			var ev stripe.Event
			if err := json.Unmarshal(e.JSON, &ev); err != nil || ev.ID != e.ID || string(ev.Type) != e.Type || ev.Created != e.Created.Unix() ||
				!strings.HasPrefix(e.ID, "evt_") || e.Created.Unix() <= 0 {
				t.Errorf("event %s (%s, %s) does not parse as a Stripe event: %v", e.ID, e.Type, e.Created, err)
			}
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
		// expand[]=latest_charge is accepted and the charge parses.
		checkCharge(t, in)
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
		charged := 0
		for _, in := range page.Intents {
			checkIntent(t, in)
			if in.LatestCharge != nil {
				checkCharge(t, in)
				charged++
			}
		}
		// expand[]=data.latest_charge is accepted and the charges parse.
		if charged == 0 {
			t.Errorf("no listed intent came with its charge")
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

	// The slim decoder reads the server's answers exactly as stripe-go's
	// typed structs do (the requests are the same: decode_test.go).
	t.Run("slim and typed decoders agree", func(t *testing.T) {
		t.Parallel()
		gw := gateway(t, tgt.key)
		slim, err := gw.RetrieveIntent(ctx, tgt.id)
		if err != nil {
			t.Fatal(err)
		}
		typed, err := stripeapi.TypedRetrieveIntent(gw, ctx, tgt.id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(slim, typed) {
			t.Errorf("retrieve:\nslim  %+v\ntyped %+v", slim, typed)
		}
		q := payrecon.ListQuery{Limit: 100}
		slimPage, err := gw.ListIntents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		typedPage, err := stripeapi.TypedListIntents(gw, ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(slimPage.Intents) == 0 || !reflect.DeepEqual(slimPage, typedPage) {
			t.Errorf("list:\nslim  %+v\ntyped %+v", slimPage, typedPage)
		}
	})

	t.Run("list events one page", func(t *testing.T) {
		t.Parallel()
		page, err := gateway(t, tgt.key).ListEvents(ctx, payrecon.EventQuery{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 || len(page.Events) > 2 {
			t.Fatalf("%d events on a page of 2", len(page.Events))
		}
		checkEvents(t, page)
	})

	t.Run("list events with every parameter", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		gw := gateway(t, tgt.key)
		for _, cursor := range []payrecon.EventQuery{{StartingAfter: tgt.event}, {EndingBefore: tgt.event}} {
			q := cursor
			q.Types = []string{"payment_intent.succeeded", "payment_intent.canceled", "payment_intent.payment_failed", "charge.refunded", "charge.dispute.created"}
			q.CreatedGTE = now.Add(-30 * 24 * time.Hour)
			q.CreatedLT = now.Add(time.Hour)
			q.Limit = 100
			page, err := gw.ListEvents(ctx, q)
			if err != nil {
				t.Fatalf("%+v: %v", q, err)
			}
			checkEvents(t, page)
		}
	})

	t.Run("check access", func(t *testing.T) {
		t.Parallel()
		if err := gateway(t, tgt.key).CheckAccess(ctx, stripeapi.AccessNeeds{Charges: true, Events: true}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("payouts and their lines", func(t *testing.T) {
		t.Parallel()
		gw := gateway(t, tgt.key)
		page, err := gw.ListPayouts(ctx, payrecon.PayoutQuery{CreatedGTE: time.Now().Add(-365 * 24 * time.Hour * 30), Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Payouts) == 0 {
			t.Fatal("no payout listed")
		}
		p := page.Payouts[0]
		if !strings.HasPrefix(p.ID, "po_") || p.Status == "" || p.Currency == "" || p.Created.IsZero() || p.ReconciliationStatus == "" {
			t.Errorf("payout %+v does not parse as a Payout", p)
		}
		if _, err := gw.RetrievePayout(ctx, "", p.ID); err != nil {
			t.Fatal(err)
		}
		lines, err := gw.ListPayoutLines(ctx, payrecon.PayoutLineQuery{PayoutID: p.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(lines.Lines) == 0 {
			t.Fatal("no line listed")
		}
		for _, l := range lines.Lines {
			if !strings.HasPrefix(l.ID, "txn_") || l.Type == "" || l.ReportingCategory == "" || l.Currency == "" || l.Net != l.Amount-l.Fee {
				t.Errorf("line %+v does not parse as a BalanceTransaction", l)
			}
		}
		if err := gw.CheckPayoutAccess(ctx, ""); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("connected account", func(t *testing.T) {
		t.Parallel()
		gw := gateway(t, tgt.key).ForAccount(tgt.account, nil)
		in, err := gw.RetrieveIntent(ctx, tgt.accountIntent)
		if err != nil {
			t.Fatalf("retrieve as %s: %v", tgt.account, err)
		}
		checkIntent(t, in)
		if _, err := gw.ListIntents(ctx, payrecon.ListQuery{Limit: 3}); err != nil {
			t.Fatalf("list as %s: %v", tgt.account, err)
		}
		if _, err := gw.ListEvents(ctx, payrecon.EventQuery{Types: payrecon.CatchUpEventTypes, Limit: 3}); err != nil {
			t.Fatalf("events as %s: %v", tgt.account, err)
		}
	})

	// The two requests of a session row: a retrieve with its PaymentIntent
	// and the intent's charge expanded, and a list by created with the same
	// expansion under data.
	checkSession := func(t *testing.T, s payrecon.Session) {
		t.Helper()
		if !strings.HasPrefix(s.ID, "cs_") || s.Status == "" || s.PaymentStatus == "" || s.Created.Unix() <= 0 || s.ExpiresAt.Unix() <= 0 {
			t.Errorf("session %+v does not parse as a Checkout Session", s)
		}
		if s.PaymentIntentID != "" {
			if s.PaymentIntent == nil {
				t.Fatalf("session %s: payment_intent %s came back as an id, not expanded", s.ID, s.PaymentIntentID)
			}
			checkIntent(t, *s.PaymentIntent)
		}
	}
	t.Run("checkout session retrieve", func(t *testing.T) {
		t.Parallel()
		s, err := gateway(t, tgt.key).RetrieveSession(ctx, tgt.session)
		if err != nil {
			t.Fatal(err)
		}
		if s.ID != tgt.session {
			t.Errorf("retrieved %q, asked for %q", s.ID, tgt.session)
		}
		checkSession(t, s)
		if tgt.paid {
			if s.PaymentIntent == nil {
				t.Fatalf("session %s has no PaymentIntent", s.ID)
			}
			checkCharge(t, *s.PaymentIntent)
		}
	})
	t.Run("checkout session list", func(t *testing.T) {
		t.Parallel()
		now := time.Now()
		page, err := gateway(t, tgt.key).ListSessions(ctx, payrecon.ListQuery{CreatedGTE: now.Add(-365 * 24 * time.Hour), CreatedLTE: now.Add(time.Hour), Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Sessions) == 0 {
			t.Fatal("no session listed")
		}
		for _, s := range page.Sessions {
			checkSession(t, s)
		}
		if _, err := gateway(t, tgt.key).ListSessions(ctx, payrecon.ListQuery{StartingAfter: tgt.session, Limit: 3}); err != nil {
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
	known := sim.Put(stripesim.Intent{ID: "pi_contract", Amount: 1500, Currency: "eur", Created: time.Now().Add(-time.Minute)})
	event, err := sim.SetStatus(known.ID, payrecon.IntentSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Refund(known.ID, 500); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.CreatePayout(stripesim.PayoutSpec{Intents: []string{known.ID}, Fees: []int64{50}}); err != nil {
		t.Fatal(err)
	}
	sim.Put(stripesim.Intent{ID: "pi_contract_acct", Account: "acct_contract", Created: time.Now().Add(-time.Minute)})
	if _, err := sim.CreateSession(stripesim.Session{ID: "cs_contract_open", Created: time.Now().Add(-2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	cs, err := sim.CreateSession(stripesim.Session{ID: "cs_contract", Created: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sim.CompleteSession(cs.ID, stripesim.Intent{Amount: 2500}, false); err != nil {
		t.Fatal(err)
	}
	runContract(t, contractTarget{url: sim.URL(), key: sim.SecretKey(), badKey: "sk_test_rejected", id: known.ID, event: event,
		account: "acct_contract", accountIntent: "pi_contract_acct", session: cs.ID, paid: true})
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
	// requested id and answers fixtures (it never 404s, and accepts any
	// cursor). Its fixture intent's latest_charge is null unless expanded,
	// so a parsed charge proves the expansion was sent and understood; it
	// answers an expansion spelled wrongly on the list with a 400.
	runContract(t, contractTarget{url: url, key: "sk_test_123", badKey: "not_a_key", id: "pi_contract", event: "evt_contract",
		account: "acct_contract", accountIntent: "pi_contract", session: "cs_contract"})
}
