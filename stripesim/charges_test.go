package stripesim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

// chargeBody is a Charge as the simulator renders it.
type chargeBody struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Amount         int64  `json:"amount"`
	AmountCaptured int64  `json:"amount_captured"`
	AmountRefunded int64  `json:"amount_refunded"`
	Captured       bool   `json:"captured"`
	Created        int64  `json:"created"`
	Currency       string `json:"currency"`
	Disputed       bool   `json:"disputed"`
	Paid           bool   `json:"paid"`
	PaymentIntent  string `json:"payment_intent"`
	Refunded       bool   `json:"refunded"`
	Status         string `json:"status"`
}

// intentBody is a PaymentIntent whose latest_charge may be expanded.
type intentBody struct {
	ID             string          `json:"id"`
	Amount         int64           `json:"amount"`
	AmountReceived int64           `json:"amount_received"`
	Currency       string          `json:"currency"`
	Status         string          `json:"status"`
	LatestCharge   json.RawMessage `json:"latest_charge"`
}

// charge decodes an expanded latest_charge; it fails the test when the
// charge is not an object.
func (in intentBody) charge(t testing.TB) chargeBody {
	t.Helper()
	var c chargeBody
	if err := json.Unmarshal(in.LatestCharge, &c); err != nil || c.Object != "charge" {
		t.Fatalf("latest_charge of %s is not an expanded charge: %s", in.ID, in.LatestCharge)
	}
	return c
}

func (b *testBundle) intent(t testing.TB, path string) intentBody {
	t.Helper()
	r := b.get(t, path)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, r.status, r.body)
	}
	var in intentBody
	if err := json.Unmarshal(r.body, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// expandedCharge retrieves intent id with its charge expanded.
func (b *testBundle) expandedCharge(t testing.TB, id string) chargeBody {
	t.Helper()
	return b.intent(t, "/v1/payment_intents/"+id+"?expand[]=latest_charge").charge(t)
}

// eventObject returns the type and data.object of event id as delivered.
func eventObject(t testing.TB, sim *stripesim.Server, id string) (string, json.RawMessage, map[string]any) {
	t.Helper()
	payload, err := sim.EventPayload(id)
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Object   json.RawMessage `json:"object"`
			Previous map[string]any  `json:"previous_attributes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Type, ev.Data.Object, ev.Data.Previous
}

func TestChargeExpansion(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b.sim.Put(stripesim.Intent{ID: "pi_paid", Amount: 5000, Currency: "JPY", Status: payrecon.IntentSucceeded, Created: created})
	b.sim.Put(stripesim.Intent{ID: "pi_open", Amount: 700, Created: created.Add(time.Second)})

	// Without expansion latest_charge is the id, as in Stripe.
	plain := b.intent(t, "/v1/payment_intents/pi_paid")
	if string(plain.LatestCharge) != `"ch_paid"` || plain.AmountReceived != 5000 || plain.Currency != "jpy" {
		t.Fatalf("unexpanded: %+v latest_charge %s", plain, plain.LatestCharge)
	}
	// Expanded, on retrieve, in both spellings of the array.
	for _, q := range []string{"expand[]=latest_charge", "expand[0]=latest_charge"} {
		c := b.intent(t, "/v1/payment_intents/pi_paid?"+q).charge(t)
		want := chargeBody{ID: "ch_paid", Object: "charge", Amount: 5000, AmountCaptured: 5000, Captured: true,
			Created: created.Unix(), Currency: "jpy", Paid: true, PaymentIntent: "pi_paid", Status: "succeeded"}
		if c != want {
			t.Errorf("%s: charge %+v, want %+v", q, c, want)
		}
	}
	// An intent without a charge: null, expanded or not.
	for _, q := range []string{"", "?expand[]=latest_charge"} {
		if in := b.intent(t, "/v1/payment_intents/pi_open"+q); string(in.LatestCharge) != "null" || in.AmountReceived != 0 {
			t.Errorf("pi_open%s: %+v latest_charge %s", q, in, in.LatestCharge)
		}
	}

	// On list: data.latest_charge.
	r := b.get(t, "/v1/payment_intents?expand[]=data.latest_charge")
	var items []intentBody
	for _, raw := range r.list(t).Data {
		var in intentBody
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		items = append(items, in)
	}
	if len(items) != 2 || items[0].ID != "pi_open" || string(items[0].LatestCharge) != "null" || items[1].charge(t).ID != "ch_paid" {
		t.Fatalf("list: %+v", items)
	}
	for _, raw := range b.get(t, "/v1/payment_intents").list(t).Data {
		var in intentBody
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		if in.ID == "pi_paid" && string(in.LatestCharge) != `"ch_paid"` {
			t.Errorf("unexpanded list: latest_charge %s", in.LatestCharge)
		}
	}
}

func TestUnknownExpansionsAreRejected(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1", Status: payrecon.IntentSucceeded})
	tests := []struct{ path, message string }{
		{"/v1/payment_intents/pi_1?expand[]=customer", "This property cannot be expanded (customer)."},
		{"/v1/payment_intents/pi_1?expand[]=data.latest_charge", "This property cannot be expanded (data.latest_charge)."},
		{"/v1/payment_intents/pi_1?expand[]=latest_charge.balance_transaction", "This property cannot be expanded (latest_charge.balance_transaction)."},
		{"/v1/payment_intents?expand[]=latest_charge", "This property cannot be expanded (latest_charge). You may want to try expanding 'data.latest_charge' instead."},
		{"/v1/payment_intents?expand[]=data.customer", "This property cannot be expanded (data.customer)."},
		{"/v1/payment_intents?expand[0]=data.latest_charge&expand[1]=data.payment_method", "This property cannot be expanded (data.payment_method)."},
		{"/v1/events?expand[]=data.object", "This property cannot be expanded (data.object)."},
	}
	for _, tt := range tests {
		r := b.get(t, tt.path)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", tt.path, r.status, r.body)
			continue
		}
		if e := r.stripeError(t); e["message"] != tt.message || e["type"] != "invalid_request_error" {
			t.Errorf("%s: error %v, want message %q", tt.path, e, tt.message)
		}
	}
}

func TestRefunds(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1", Amount: 5000, Currency: "eur", Status: payrecon.IntentSucceeded})

	steps := []struct {
		amount       int64
		err          error
		wantRefunded int64
		wantFull     bool
	}{
		{amount: -1, err: stripesim.ErrInvalidAmount},
		{amount: 1000, wantRefunded: 1000},                                   // partial
		{amount: 1500, wantRefunded: 2500},                                   // cumulative
		{amount: 2501, err: stripesim.ErrRefundTooLarge, wantRefunded: 2500}, // one more than is left
		{amount: 2500, wantRefunded: 5000, wantFull: true},
		{amount: 1, err: stripesim.ErrAlreadyRefunded, wantRefunded: 5000, wantFull: true},
		{amount: 0, err: stripesim.ErrAlreadyRefunded, wantRefunded: 5000, wantFull: true},
	}
	var events []string
	for i, st := range steps {
		b.clock.Advance(time.Second)
		id, err := b.sim.Refund("pi_1", st.amount)
		if !errors.Is(err, st.err) || (err == nil) != (id != "") {
			t.Fatalf("step %d: Refund(%d) = %q, %v; want error %v", i, st.amount, id, err, st.err)
		}
		c := b.expandedCharge(t, "pi_1")
		if c.AmountRefunded != st.wantRefunded || c.Refunded != st.wantFull || c.AmountCaptured != 5000 {
			t.Fatalf("step %d: charge %+v, want refunded %d (full %v)", i, c, st.wantRefunded, st.wantFull)
		}
		if got, _ := b.sim.Get("pi_1"); got.AmountRefunded != st.wantRefunded {
			t.Fatalf("step %d: Get shows %d refunded", i, got.AmountRefunded)
		}
		if id == "" {
			continue
		}
		events = append(events, id)
		typ, obj, previous := eventObject(t, b.sim, id)
		var ec chargeBody
		if err := json.Unmarshal(obj, &ec); err != nil {
			t.Fatal(err)
		}
		if typ != stripesim.EventChargeRefunded || ec != c {
			t.Errorf("step %d: event %s data.object %+v, want the charge %+v", i, typ, ec, c)
		}
		if previous["amount_refunded"] != float64(st.wantRefunded-st.amount) {
			t.Errorf("step %d: previous_attributes %v", i, previous)
		}
	}
	if len(events) != 3 {
		t.Fatalf("%d refund events, want 3", len(events))
	}
	for _, e := range b.sim.Events() {
		if e.Type != stripesim.EventChargeRefunded || e.IntentID != "pi_1" || e.Status != payrecon.IntentSucceeded {
			t.Errorf("event %+v", e)
		}
	}

	// Refund 0 refunds what is left.
	b.sim.Put(stripesim.Intent{ID: "pi_2", Amount: 900, AmountReceived: 800, Status: payrecon.IntentSucceeded})
	if _, err := b.sim.Refund("pi_2", 300); err != nil {
		t.Fatal(err)
	}
	if _, err := b.sim.Refund("pi_2", 0); err != nil {
		t.Fatal(err)
	}
	if c := b.expandedCharge(t, "pi_2"); c.AmountRefunded != 800 || !c.Refunded || c.Amount != 900 || c.AmountCaptured != 800 {
		t.Fatalf("refund of the rest: %+v", c)
	}

	// No charge, no intent.
	b.sim.Put(stripesim.Intent{ID: "pi_open", Status: payrecon.IntentRequiresCapture})
	if _, err := b.sim.Refund("pi_open", 100); !errors.Is(err, stripesim.ErrNoCharge) {
		t.Errorf("refund of an uncaptured intent: %v", err)
	}
	if _, err := b.sim.Refund("pi_nope", 100); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Errorf("refund of a missing intent: %v", err)
	}
}

func TestDisputes(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1", Amount: 3000, Currency: "gbp", Status: payrecon.IntentSucceeded})
	if _, err := b.sim.Refund("pi_1", 1000); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	id, err := b.sim.Dispute("pi_1")
	if err != nil {
		t.Fatal(err)
	}
	c := b.expandedCharge(t, "pi_1")
	if !c.Disputed || c.AmountRefunded != 1000 || c.Refunded {
		t.Fatalf("charge after the dispute: %+v", c)
	}
	typ, obj, previous := eventObject(t, b.sim, id)
	var d struct {
		ID, Object, Charge, Currency, PaymentIntent, Status string
		Amount, Created                                     int64
	}
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatal(err)
	}
	d.ID, _ = m["id"].(string)
	d.Object, _ = m["object"].(string)
	d.Charge, _ = m["charge"].(string)
	d.Currency, _ = m["currency"].(string)
	d.PaymentIntent, _ = m["payment_intent"].(string)
	d.Status, _ = m["status"].(string)
	amount, _ := m["amount"].(float64)
	created, _ := m["created"].(float64)
	if typ != stripesim.EventChargeDisputeCreated || !strings.HasPrefix(d.ID, "dp_") || d.Object != "dispute" || d.Charge != "ch_1" ||
		d.Currency != "gbp" || d.PaymentIntent != "pi_1" || d.Status != "needs_response" || amount != 2000 ||
		int64(created) != b.clock.Now().Unix() || previous != nil {
		t.Fatalf("dispute event %s: %s", typ, obj)
	}

	if _, err := b.sim.Dispute("pi_1"); !errors.Is(err, stripesim.ErrChargeDisputed) {
		t.Errorf("second dispute: %v", err)
	}
	if _, err := b.sim.Refund("pi_1", 100); !errors.Is(err, stripesim.ErrChargeDisputed) {
		t.Errorf("refund of a disputed charge: %v", err)
	}
	b.sim.Put(stripesim.Intent{ID: "pi_failed", Status: payrecon.IntentRequiresPaymentMethod})
	if _, err := b.sim.Dispute("pi_failed"); !errors.Is(err, stripesim.ErrNoCharge) {
		t.Errorf("dispute without a charge: %v", err)
	}
	if _, err := b.sim.Dispute("pi_nope"); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Errorf("dispute of a missing intent: %v", err)
	}
	evs := b.sim.Events()
	if len(evs) != 2 || evs[1].ID != id || evs[1].IntentID != "pi_1" {
		t.Errorf("events %+v", evs)
	}
}

func TestMoneyState(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})

	// Captured for less, in another currency; the charge is made when the
	// intent succeeds.
	in, err := b.sim.Create(stripesim.Intent{ID: "pi_1", Amount: 5000, AmountReceived: 4000, Currency: "JPY", Status: payrecon.IntentRequiresCapture})
	if err != nil {
		t.Fatal(err)
	}
	if in.Currency != "jpy" || in.AmountReceived != 4000 {
		t.Fatalf("stored %+v", in)
	}
	if got := b.intent(t, "/v1/payment_intents/pi_1?expand[]=latest_charge"); got.AmountReceived != 0 || string(got.LatestCharge) != "null" {
		t.Fatalf("before capture: %+v %s", got, got.LatestCharge)
	}
	b.clock.Advance(time.Hour)
	if _, err := b.sim.SetStatus("pi_1", payrecon.IntentSucceeded); err != nil {
		t.Fatal(err)
	}
	got := b.intent(t, "/v1/payment_intents/pi_1?expand[]=latest_charge")
	if c := got.charge(t); got.Amount != 5000 || got.AmountReceived != 4000 || got.Currency != "jpy" ||
		c.Amount != 5000 || c.AmountCaptured != 4000 || c.Currency != "jpy" || c.Created != b.clock.Now().Unix() {
		t.Fatalf("captured for less: %+v %+v", got, c)
	}

	// SetMoney: zero fields keep their value; an intent that captured its
	// whole amount goes on doing so when the amount changes.
	b.sim.Put(stripesim.Intent{ID: "pi_2", Amount: 1000, Status: payrecon.IntentSucceeded})
	if err := b.sim.SetMoney("pi_2", stripesim.Money{Amount: 1200}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.sim.Get("pi_2"); got.Amount != 1200 || got.AmountReceived != 1200 || got.Currency != "usd" {
		t.Fatalf("after SetMoney amount: %+v", got)
	}
	if err := b.sim.SetMoney("pi_2", stripesim.Money{AmountReceived: 900, Currency: "EUR"}); err != nil {
		t.Fatal(err)
	}
	if c := b.expandedCharge(t, "pi_2"); c.Amount != 1200 || c.AmountCaptured != 900 || c.Currency != "eur" {
		t.Fatalf("after SetMoney received: %+v", c)
	}
	if _, err := b.sim.Refund("pi_2", 900); err != nil {
		t.Fatal(err)
	}
	if err := b.sim.SetMoney("pi_2", stripesim.Money{AmountReceived: 800}); !errors.Is(err, stripesim.ErrInvalidAmount) {
		t.Errorf("SetMoney below the refunded amount: %v", err)
	}
	if err := b.sim.SetMoney("pi_2", stripesim.Money{Amount: -5}); !errors.Is(err, stripesim.ErrInvalidAmount) {
		t.Errorf("negative SetMoney: %v", err)
	}
	if err := b.sim.SetMoney("pi_nope", stripesim.Money{Amount: 5}); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Errorf("SetMoney of a missing intent: %v", err)
	}
	if n := len(b.sim.Events()); n != 3 { // created, succeeded, refunded: SetMoney records none
		t.Errorf("%d events", n)
	}

	// Seed sets refund and dispute state without events, and refuses what
	// Stripe never shows.
	if err := b.sim.Seed(2, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: fmt.Sprintf("pi_seed%d", i), Amount: 100, Status: payrecon.IntentSucceeded, AmountRefunded: 100, Disputed: i == 1}
	}); err != nil {
		t.Fatal(err)
	}
	if c := b.expandedCharge(t, "pi_seed1"); !c.Refunded || !c.Disputed || c.AmountRefunded != 100 {
		t.Fatalf("seeded charge %+v", c)
	}
	if err := b.sim.Seed(1, func(int) stripesim.Intent {
		return stripesim.Intent{ID: "pi_bad", Amount: 100, AmountRefunded: 101}
	}); !errors.Is(err, stripesim.ErrInvalidAmount) {
		t.Errorf("Seed refunding more than captured: %v", err)
	}
	if _, err := b.sim.Create(stripesim.Intent{ID: "pi_neg", Amount: -1}); !errors.Is(err, stripesim.ErrInvalidAmount) {
		t.Errorf("Create with a negative amount: %v", err)
	}
	if _, ok := b.sim.Get("pi_bad"); ok {
		t.Error("a refused Seed stored an intent")
	}
}

func TestMissingPermissions(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1", Status: payrecon.IntentSucceeded})
	tests := []struct {
		missing []string
		path    string
		want    string // the permission named, "" for 200
	}{
		{[]string{stripesim.PermissionChargeRead}, "/v1/payment_intents/pi_1", ""},
		{[]string{stripesim.PermissionChargeRead}, "/v1/payment_intents/pi_1?expand[]=latest_charge", "rak_charge_read"},
		{[]string{stripesim.PermissionChargeRead}, "/v1/payment_intents?limit=1&expand[]=data.latest_charge", "rak_charge_read"},
		{[]string{stripesim.PermissionChargeRead}, "/v1/events", ""},
		{[]string{stripesim.PermissionEventRead}, "/v1/events?limit=1", "rak_event_read"},
		{[]string{stripesim.PermissionEventRead}, "/v1/payment_intents?expand[]=data.latest_charge", ""},
		{[]string{stripesim.PermissionPaymentIntentRead, stripesim.PermissionChargeRead}, "/v1/payment_intents?expand[]=data.latest_charge", "rak_payment_intent_read"},
	}
	for _, tt := range tests {
		// Sequential: the cases share the simulator's faults.
		b.sim.SetFaults(stripesim.Faults{MissingPermissions: tt.missing})
		r := b.get(t, tt.path)
		if tt.want == "" {
			if r.status != http.StatusOK {
				t.Errorf("%v %s: status %d: %s", tt.missing, tt.path, r.status, r.body)
			}
			continue
		}
		if r.status != http.StatusForbidden {
			t.Errorf("%v %s: status %d, want 403", tt.missing, tt.path, r.status)
			continue
		}
		msg, _ := r.stripeError(t)["message"].(string)
		if !strings.Contains(msg, "Having the '"+tt.want+"' permission would allow this request to continue.") || strings.Contains(msg, b.sim.SecretKey()) {
			t.Errorf("%v %s: message %q", tt.missing, tt.path, msg)
		}
	}
	if f := b.sim.Faults(); !slices.Equal(f.MissingPermissions, tests[len(tests)-1].missing) {
		t.Errorf("Faults() = %+v", f)
	}
}

func TestChargeEventsAreListedAndDelivered(t *testing.T) {
	t.Parallel()
	rc, url := newReceiver(t)
	b := setup(t, stripesim.Config{Clock: payrecon.SystemClock{}, Webhook: stripesim.WebhookConfig{URL: url, Secret: whSecret}})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.sim.Put(stripesim.Intent{ID: "pi_2", Status: payrecon.IntentSucceeded})
	succeeded, err := b.sim.SetStatus("pi_1", payrecon.IntentSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	refunded, err := b.sim.Refund("pi_1", 10)
	if err != nil {
		t.Fatal(err)
	}
	disputed, err := b.sim.Dispute("pi_2")
	if err != nil {
		t.Fatal(err)
	}
	ids := func(path string) []string { return b.get(t, path).list(t).ids(t) }
	if got := ids("/v1/events?types[]=charge.refunded&types[]=charge.dispute.created"); !slices.Equal(got, []string{disputed, refunded}) {
		t.Errorf("types[]: %v, want %v", got, []string{disputed, refunded})
	}
	if got := ids("/v1/events?type=charge.*"); !slices.Equal(got, []string{disputed, refunded}) {
		t.Errorf("type=charge.*: %v", got)
	}
	if got := ids("/v1/events?types[0]=charge.dispute.created"); !slices.Equal(got, []string{disputed}) {
		t.Errorf("types[0]: %v", got)
	}

	ds, err := b.sim.DeliverPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range ds {
		if !d.OK() {
			t.Errorf("delivery %+v", d)
		}
		types = append(types, d.EventType)
	}
	if want := []string{"payment_intent.succeeded", "charge.refunded", "charge.dispute.created"}; !slices.Equal(types, want) {
		t.Errorf("delivered %v, want %v", types, want)
	}
	got, errs := rc.snapshot()
	if len(errs) != 0 || !slices.Equal(got, []string{succeeded, refunded, disputed}) {
		t.Errorf("received %v (errors %v)", got, errs)
	}
}

// TestListEventsWalkForward walks the events oldest first, as the events
// catch-up does: ending_before = the newest event seen, each page read from
// its end. Refund and dispute events interleave with intent events, several
// per second.
func TestListEventsWalkForward(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	start := b.clock.Now()
	for i := range 12 {
		id := fmt.Sprintf("pi_%02d", i)
		b.sim.Put(stripesim.Intent{ID: id, Amount: 100})
		if _, err := b.sim.SetStatus(id, payrecon.IntentSucceeded); err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0:
			if _, err := b.sim.Refund(id, 40); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := b.sim.Dispute(id); err != nil {
				t.Fatal(err)
			}
		}
		if i%2 == 1 {
			b.clock.Advance(time.Second)
		}
	}
	all := b.sim.Events() // oldest first
	watched := []string{"payment_intent.succeeded", "charge.refunded", "charge.dispute.created"}
	lo := start.Unix() + 1 // the first second's events are older than the window
	var want []string
	for _, e := range all {
		if e.Created.Unix() >= lo && slices.Contains(watched, e.Type) {
			want = append(want, e.ID)
		}
	}
	filter := fmt.Sprintf("types[]=%s&types[]=%s&types[]=%s&created[gte]=%d&limit=4", watched[0], watched[1], watched[2], lo)

	// The walk starts from the newest event before the window, as the
	// catch-up starts from the last event it applied.
	var cursor string
	for _, e := range all {
		if e.Created.Unix() < lo {
			cursor = e.ID
		}
	}
	var got []string
	for requests := 0; ; requests++ {
		if requests > 10 {
			t.Fatal("no end to the walk")
		}
		l := b.get(t, "/v1/events?"+filter+"&ending_before="+cursor).list(t)
		page := l.ids(t)
		for _, id := range slices.Backward(page) {
			got = append(got, id)
		}
		if len(page) > 0 {
			cursor = page[0] // the newest of the page
		}
		if !l.HasMore {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("forward walk:\n got %v\nwant %v", got, want)
	}

	// Backwards with starting_after gives the same events newest first,
	// and created[lt] bounds the other end.
	hi := start.Unix() + 4
	var back []string
	after := ""
	for {
		path := fmt.Sprintf("/v1/events?%s&created[lt]=%d", filter, hi)
		if after != "" {
			path += "&starting_after=" + after
		}
		l := b.get(t, path).list(t)
		page := l.ids(t)
		back = append(back, page...)
		if !l.HasMore {
			break
		}
		after = page[len(page)-1]
	}
	var wantBack []string
	for _, e := range slices.Backward(all) {
		if c := e.Created.Unix(); c >= lo && c < hi && slices.Contains(watched, e.Type) {
			wantBack = append(wantBack, e.ID)
		}
	}
	if !slices.Equal(back, wantBack) || len(back) == 0 {
		t.Fatalf("backward walk:\n got %v\nwant %v", back, wantBack)
	}
}
