package stripesim_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

type sessionBody struct {
	ID            string          `json:"id"`
	Object        string          `json:"object"`
	Status        string          `json:"status"`
	PaymentStatus string          `json:"payment_status"`
	ExpiresAt     int64           `json:"expires_at"`
	PaymentIntent json.RawMessage `json:"payment_intent"`
}

// A session's life: open without an intent, complete with one (a card, or
// an asynchronous method that settles later), expired; each change records
// the event Stripe sends, and reads expand the intent and its charge.
func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	open, err := b.sim.CreateSession(stripesim.Session{})
	if err != nil {
		t.Fatal(err)
	}
	if open.Status != payrecon.SessionOpen || open.PaymentStatus != payrecon.SessionUnpaid || open.IntentID != "" ||
		open.ExpiresAt.Sub(open.Created) != 24*time.Hour {
		t.Fatalf("new session %+v", open)
	}
	var s sessionBody
	r := b.get(t, "/v1/checkout/sessions/"+open.ID+"?expand[]=payment_intent.latest_charge")
	if r.status != 200 || json.Unmarshal(r.body, &s) != nil || s.Object != "checkout.session" || string(s.PaymentIntent) != "null" {
		t.Fatalf("open session: %d %s", r.status, r.body)
	}

	card, _ := b.sim.CreateSession(stripesim.Session{})
	ev, pi, err := b.sim.CompleteSession(card.ID, stripesim.Intent{Amount: 4200}, false)
	if err != nil {
		t.Fatal(err)
	}
	r = b.get(t, "/v1/checkout/sessions/"+card.ID+"?expand[]=payment_intent.latest_charge")
	var expanded struct {
		sessionBody
		PaymentIntent struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			LatestCharge struct {
				ID     string `json:"id"`
				Object string `json:"object"`
			} `json:"latest_charge"`
		} `json:"payment_intent"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &expanded) != nil || expanded.Status != "complete" || expanded.PaymentStatus != "paid" ||
		expanded.PaymentIntent.ID != pi || expanded.PaymentIntent.Status != "succeeded" || expanded.PaymentIntent.LatestCharge.Object != "charge" {
		t.Fatalf("complete session: %d %s", r.status, r.body)
	}
	r = b.get(t, "/v1/checkout/sessions/"+card.ID)
	if json.Unmarshal(r.body, &s) != nil || string(s.PaymentIntent) != fmt.Sprintf("%q", pi) {
		t.Fatalf("unexpanded: %s", r.body)
	}

	async, _ := b.sim.CreateSession(stripesim.Session{})
	if _, _, err := b.sim.CompleteSession(async.ID, stripesim.Intent{}, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.sim.GetSession(async.ID); got.PaymentStatus != payrecon.SessionUnpaid {
		t.Fatalf("async session before settling: %+v", got)
	}
	ok, _ := b.sim.SettleAsyncSession(async.ID, true)
	failedAsync, _ := b.sim.CreateSession(stripesim.Session{})
	_, failedPI, _ := b.sim.CompleteSession(failedAsync.ID, stripesim.Intent{}, true)
	bad, err := b.sim.SettleAsyncSession(failedAsync.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := b.sim.Get(failedPI); in.Status != payrecon.IntentRequiresPaymentMethod {
		t.Fatalf("failed async intent: %+v", in)
	}
	exp, err := b.sim.ExpireSession(open.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.sim.ExpireSession(card.ID); !errors.Is(err, stripesim.ErrSessionState) {
		t.Fatalf("expire a complete session: %v", err)
	}
	types := map[string]string{}
	for _, e := range b.sim.Events() {
		types[e.ID] = e.Type
	}
	for id, want := range map[string]string{ev: payrecon.EventCheckoutSessionCompleted, ok: payrecon.EventCheckoutSessionAsyncPaymentSucceeded,
		bad: payrecon.EventCheckoutSessionAsyncPaymentFailed, exp: payrecon.EventCheckoutSessionExpired} {
		if types[id] != want {
			t.Errorf("event %s is %q, want %s", id, types[id], want)
		}
	}
	payload, err := b.sim.EventPayload(ev)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := payrecon.ParseEvent(payload)
	if err != nil || parsed.Object.ID != card.ID || parsed.Object.Object != "checkout.session" || parsed.Object.PaymentIntent != pi {
		t.Fatalf("event %s parses as %+v (%v)", ev, parsed, err)
	}
}

// The list filters by created, pages by starting_after, expands under
// data. only, and keeps each account's sessions to itself.
func TestListSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	base := b.clock.Now()
	for i := range 5 {
		if _, err := b.sim.CreateSession(stripesim.Session{ID: fmt.Sprintf("cs_%d", i), Created: base.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.sim.CreateSession(stripesim.Session{ID: "cs_other", Account: "acct_1", Created: base}); err != nil {
		t.Fatal(err)
	}
	var page struct {
		Data    []sessionBody `json:"data"`
		HasMore bool          `json:"has_more"`
	}
	r := b.get(t, fmt.Sprintf("/v1/checkout/sessions?limit=2&created[gte]=%d&created[lte]=%d&expand[]=data.payment_intent.latest_charge",
		base.Add(time.Minute).Unix(), base.Add(3*time.Minute).Unix()))
	if r.status != 200 || json.Unmarshal(r.body, &page) != nil || len(page.Data) != 2 || !page.HasMore || page.Data[0].ID != "cs_3" || page.Data[1].ID != "cs_2" {
		t.Fatalf("first page: %d %s", r.status, r.body)
	}
	r = b.get(t, fmt.Sprintf("/v1/checkout/sessions?limit=2&created[gte]=%d&created[lte]=%d&starting_after=cs_2",
		base.Add(time.Minute).Unix(), base.Add(3*time.Minute).Unix()))
	if json.Unmarshal(r.body, &page) != nil || len(page.Data) != 1 || page.HasMore || page.Data[0].ID != "cs_1" {
		t.Fatalf("second page: %s", r.body)
	}
	if r := b.get(t, "/v1/checkout/sessions?expand[]=payment_intent"); r.status != 400 {
		t.Fatalf("an expansion without data.: %d %s", r.status, r.body)
	}
	if r := b.get(t, "/v1/checkout/sessions/cs_other"); r.status != 404 {
		t.Fatalf("another account's session without its header: %d", r.status)
	}
	r = b.getAs(t, "/v1/checkout/sessions", "Bearer "+b.sim.SecretKey(), "acct_1")
	if json.Unmarshal(r.body, &page) != nil || len(page.Data) != 1 || page.Data[0].ID != "cs_other" {
		t.Fatalf("the account's list: %s", r.body)
	}
}
