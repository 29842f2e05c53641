package stripeapi

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
)

// Slim decoding. stripe-go's typed structs decode every field of a
// PaymentIntent and of its expanded charge (hundreds, many behind custom
// UnmarshalJSON methods that scan their bytes again), and its list pages
// parse each page twice more to give every element its own raw JSON: 60 %
// of a list-mode sweep's CPU. payrecon reads a dozen fields. The gateway
// therefore asks Stripe through stripe-go's raw request API (its auth,
// retries, telemetry and typed errors stay) and decodes the answer itself
// into only those fields, in one pass. The mapping is the one the typed
// structs give (decode_test.go checks it field by field against them).

// intentWire is the part of a PaymentIntent payrecon reads, as Stripe sends
// it.
type intentWire struct {
	ID             string            `json:"id"`
	Status         string            `json:"status"`
	Created        int64             `json:"created"`
	Amount         int64             `json:"amount"`
	AmountReceived int64             `json:"amount_received"`
	Currency       string            `json:"currency"`
	Metadata       map[string]string `json:"metadata"`
	// LatestCharge is the expanded charge. When Stripe sends it as an id
	// alone (the expansion was lost on the way) the one-pass decode fails
	// on it and the answer is decoded again with chargeRef (flexIntentWire).
	LatestCharge *chargeWire `json:"latest_charge"`
}

// chargeWire is the part of a Charge the money checks read.
type chargeWire struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	AmountCaptured int64  `json:"amount_captured"`
	AmountRefunded int64  `json:"amount_refunded"`
	Refunded       bool   `json:"refunded"`
	Disputed       bool   `json:"disputed"`
	Currency       string `json:"currency"`
	Created        int64  `json:"created"`
}

// pageWire is one page of a list.
type pageWire struct {
	Data    []intentWire `json:"data"`
	HasMore bool         `json:"has_more"`
}

// flexIntentWire is intentWire with a latest_charge that may also be an id
// (or null): the second, slower decode of an answer the first one refused.
type flexIntentWire struct {
	intentWire
	LatestCharge chargeRef `json:"latest_charge"`
}

type flexPageWire struct {
	Data    []flexIntentWire `json:"data"`
	HasMore bool             `json:"has_more"`
}

// chargeRef is an expandable charge: null, its id, or the object.
type chargeRef struct{ charge *chargeWire }

// UnmarshalJSON implements json.Unmarshaler.
func (r *chargeRef) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var id string
		if err := json.Unmarshal(data, &id); err != nil {
			return err
		}
		r.charge = &chargeWire{ID: id}
		return nil
	}
	return json.Unmarshal(data, &r.charge)
}

// decodeIntent decodes a PaymentIntent.
func decodeIntent(body []byte) (payrecon.Intent, error) {
	var w intentWire
	if err := json.Unmarshal(body, &w); err == nil {
		return w.intent(w.LatestCharge), nil
	}
	var f flexIntentWire
	if err := json.Unmarshal(body, &f); err != nil {
		return payrecon.Intent{}, fmt.Errorf("decode payment intent: %w", err)
	}
	return f.intent(f.LatestCharge.charge), nil
}

// decodeIntentPage decodes a page of a PaymentIntent list.
func decodeIntentPage(body []byte) (payrecon.IntentPage, error) {
	var w pageWire
	if err := json.Unmarshal(body, &w); err == nil {
		page := payrecon.IntentPage{Intents: make([]payrecon.Intent, len(w.Data)), HasMore: w.HasMore}
		for i := range w.Data {
			page.Intents[i] = w.Data[i].intent(w.Data[i].LatestCharge)
		}
		return page, nil
	}
	var f flexPageWire
	if err := json.Unmarshal(body, &f); err != nil {
		return payrecon.IntentPage{}, fmt.Errorf("decode payment intent list: %w", err)
	}
	page := payrecon.IntentPage{Intents: make([]payrecon.Intent, len(f.Data)), HasMore: f.HasMore}
	for i := range f.Data {
		page.Intents[i] = f.Data[i].intent(f.Data[i].LatestCharge.charge)
	}
	return page, nil
}

func (w *intentWire) intent(ch *chargeWire) payrecon.Intent {
	return payrecon.Intent{
		ID:             w.ID,
		Status:         payrecon.StripeStatus(w.Status),
		Created:        unixTime(w.Created),
		Amount:         w.Amount,
		AmountReceived: w.AmountReceived,
		Currency:       w.Currency,
		Metadata:       w.Metadata,
		LatestCharge:   ch.charge(),
	}
}

// charge maps the latest charge: nil when the intent has none. A charge
// Stripe sent as its id alone keeps just the ID, so a reader can tell "no
// charge" from "a charge whose money was not read"
// (payrecon.Charge.Expanded).
func (c *chargeWire) charge() *payrecon.Charge {
	if c == nil || c.ID == "" {
		return nil
	}
	if c.Object == "" && c.Created == 0 {
		return &payrecon.Charge{ID: c.ID}
	}
	return &payrecon.Charge{
		ID:             c.ID,
		AmountCaptured: c.AmountCaptured,
		AmountRefunded: c.AmountRefunded,
		Refunded:       c.Refunded,
		Disputed:       c.Disputed,
		Currency:       c.Currency,
		Created:        unixTime(c.Created),
	}
}

// maxUnixSeconds is the end of year 9999 UTC: the latest time payrecon
// takes from Stripe (PostgreSQL's timestamptz goes further, but a time
// past it is a malformed answer, never a real one).
const maxUnixSeconds = 253402300799

// unixTime is sec as a time, or the zero time when sec is out of range
// (negative or past year 9999): an unknown creation time, never a wrapped
// one.
func unixTime(sec int64) time.Time {
	if sec < 0 || sec > maxUnixSeconds {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}
