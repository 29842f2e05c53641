package payrecon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
)

// Stripe event types payrecon handles beyond the three that map onto
// commands (see CommandForEvent).
const (
	EventChargeRefunded       = "charge.refunded"
	EventChargeDisputeCreated = "charge.dispute.created"
)

// Event is the part of a Stripe event payrecon reads: fields that are the
// same in every API version. A webhook body and an event listed by
// GET /v1/events are parsed into it by ParseEvent, so both roads share
// everything after the transport.
type Event struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	APIVersion string    `json:"api_version,omitempty"`
	Created    time.Time `json:"created"` // zero when Stripe sent none
	// Account is the connected account the event happened on (Stripe's
	// top-level account, set on Connect events); "" for the platform's own.
	Account string `json:"account,omitempty"`
	// Object is the event's data.object.
	Object EventObject `json:"object"`
}

// EventObject is the part of an event's data.object payrecon reads.
type EventObject struct {
	ID     string `json:"id"`
	Object string `json:"object"` // "payment_intent", "charge", "dispute", …
	Status string `json:"status,omitempty"`
	// PaymentIntent is the payment_intent field of a Charge or a Dispute.
	PaymentIntent string `json:"payment_intent,omitempty"`
	// The money of a Charge (charge.refunded): what it captured, what has
	// been refunded, whether fully, whether disputed, and its currency.
	AmountCaptured int64  `json:"amount_captured,omitempty"`
	AmountRefunded int64  `json:"amount_refunded,omitempty"`
	Refunded       bool   `json:"refunded,omitempty"`
	Disputed       bool   `json:"disputed,omitempty"`
	Currency       string `json:"currency,omitempty"`
	// Amount is a Dispute's amount (charge.dispute.created), Charge its
	// charge's id.
	Amount int64  `json:"amount,omitempty"`
	Charge string `json:"charge,omitempty"`
	// PaymentStatus is a Checkout Session's payment_status
	// (checkout.session.* events).
	PaymentStatus string `json:"payment_status,omitempty"`
}

// ChargeFromEvent is the charge a charge.refunded or charge.dispute.created
// event reports, as the money checks read it (nil for other events): the
// Charge itself, or for a Dispute a disputed charge with the dispute's
// amount as captured. Its Created is the event's (or at, when the event
// has none), so that it counts as read in full.
func ChargeFromEvent(ev Event, at time.Time) *Charge {
	created := ev.Created
	if created.IsZero() {
		created = at
	}
	o := ev.Object
	switch {
	case ev.Type == EventChargeRefunded && o.Object == "charge":
		return &Charge{ID: o.ID, AmountCaptured: o.AmountCaptured, AmountRefunded: o.AmountRefunded,
			Refunded: o.Refunded, Disputed: o.Disputed, Currency: o.Currency, Created: created}
	case ev.Type == EventChargeDisputeCreated && o.Object == "dispute":
		return &Charge{ID: o.Charge, AmountCaptured: o.Amount, Disputed: true, Currency: o.Currency, Created: created}
	}
	return nil
}

// MoneyEventKinds are the kinds a charge event can open: those judged from
// the charge alone.
var MoneyEventKinds = []Kind{KindRefundedExternally, KindPartiallyRefunded, KindDisputed}

// IntentID is the PaymentIntent the event is about: data.object's id when it
// is a PaymentIntent, its payment_intent field when it is a Charge or a
// Dispute, "" otherwise.
func (e Event) IntentID() string {
	if e.Object.Object == "payment_intent" {
		return e.Object.ID
	}
	return e.Object.PaymentIntent
}

// Bounds of what ParseEvent accepts. Stripe's ids are a few dozen
// characters; anything far longer is not an event of Stripe's and must not
// reach the database or the logs whole.
const (
	maxEventIDLen = 255
	// maxEventCreated is the year 9999: later times cannot be stored as a
	// timestamptz (and 2^63−1 seconds would wrap to 1969).
	maxEventCreated = 253402300799
)

// EventError says why an event was refused: the sender's fault, never worth
// retrying (a webhook answers it 400).
type EventError struct{ Reason string }

func (e *EventError) Error() string { return "malformed event: " + e.Reason }

// ParseEvent parses a Stripe event and checks its shape: an event object
// with a printable id and type of bounded length, a creation time that a
// timestamp can hold, and, for the types that act on a payment, the
// PaymentIntent they are about. Every error is an *EventError.
func ParseEvent(payload []byte) (Event, error) {
	var raw struct {
		ID         string `json:"id"`
		Object     string `json:"object"`
		Type       string `json:"type"`
		Created    int64  `json:"created"`
		APIVersion string `json:"api_version"`
		Account    string `json:"account"`
		Data       struct {
			Object EventObject `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &raw); err != nil {
		return Event{}, &EventError{fmt.Sprintf("not JSON of a Stripe event: %v", err)}
	}
	ev := Event{ID: raw.ID, Type: raw.Type, APIVersion: raw.APIVersion, Account: raw.Account, Object: raw.Data.Object}
	switch {
	case raw.Object != "event":
		return ev, &EventError{fmt.Sprintf("not a Stripe event: object is %s", Quote(raw.Object, 40))}
	case raw.ID == "":
		return ev, &EventError{"no id"}
	case raw.Type == "":
		return ev, &EventError{"no type"}
	}
	for _, f := range []struct{ name, v string }{
		{"id", raw.ID}, {"type", raw.Type}, {"api_version", raw.APIVersion}, {"account", raw.Account},
		{"data.object.id", ev.Object.ID}, {"data.object.object", ev.Object.Object},
		{"data.object.status", ev.Object.Status}, {"data.object.payment_intent", ev.Object.PaymentIntent},
		{"data.object.currency", ev.Object.Currency}, {"data.object.charge", ev.Object.Charge},
		{"data.object.payment_status", ev.Object.PaymentStatus},
	} {
		if err := checkToken(f.name, f.v); err != nil {
			return ev, err
		}
	}
	if raw.Created < 0 || raw.Created > maxEventCreated {
		return ev, &EventError{fmt.Sprintf("created %d is not a time", raw.Created)}
	}
	if raw.Created > 0 {
		ev.Created = time.Unix(raw.Created, 0).UTC()
	}
	if _, ok := CommandForEvent(ev.Type); ok && ev.IntentID() == "" {
		return ev, &EventError{fmt.Sprintf("%s without a payment_intent in data.object", ev.Type)}
	}
	return ev, nil
}

// checkToken refuses identifiers that are too long or carry control
// characters (a NUL byte cannot be stored in a text column at all).
func checkToken(name, v string) error {
	if len(v) > maxEventIDLen {
		return &EventError{fmt.Sprintf("%s is %d bytes long (at most %d)", name, len(v), maxEventIDLen)}
	}
	for _, r := range v {
		if r == unicode.ReplacementChar || unicode.IsControl(r) || !unicode.IsPrint(r) {
			return &EventError{fmt.Sprintf("%s %s has a control or invalid character", name, Quote(v, 40))}
		}
	}
	return nil
}

// Quote renders s for a log line or an error message: quoted with control
// characters escaped, and cut to at most n runes.
func Quote(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return fmt.Sprintf("%q…", string(r[:n]))
	}
	return fmt.Sprintf("%q", s)
}

// StatusAfterEvent is the PaymentIntent status a handled event reports, for
// events whose data.object carries none.
func StatusAfterEvent(eventType string) StripeStatus {
	switch eventType {
	case EventPaymentIntentSucceeded:
		return IntentSucceeded
	case EventPaymentIntentCanceled:
		return IntentCanceled
	case EventPaymentIntentPaymentFailed, EventCheckoutSessionAsyncPaymentFailed:
		return IntentRequiresPaymentMethod
	case EventCheckoutSessionCompleted, EventCheckoutSessionAsyncPaymentSucceeded:
		return IntentSucceeded
	case EventCheckoutSessionExpired:
		return IntentCanceled
	}
	return Unknown
}

// OutcomeIgnored is the outcome of an event payrecon records without acting
// on.
const OutcomeIgnored = "ignored"

// OutcomeAccountMismatch is the outcome of an event from another account
// than the one its payment's row records (Connect): not applied, an
// account_mismatch finding opened instead.
const OutcomeAccountMismatch = "account_mismatch"

// OutcomeMoneyFinding is the outcome of a charge event that opened a money
// finding (charge.refunded, charge.dispute.created); the payment is never
// changed by one.
const OutcomeMoneyFinding = "money_finding"

// EventResult is what processing one event did.
type EventResult struct {
	EventID string `json:"event_id"`
	// Outcome is the writer's outcome (applied, already_in_target,
	// moved_elsewhere, payment_missing) or "ignored"; for a duplicate, the
	// outcome recorded by the first delivery.
	Outcome string `json:"outcome"`
	// Duplicate is true for an event already processed (a redelivery, or a
	// webhook for an event the catch-up already applied, and vice versa).
	Duplicate bool  `json:"duplicate,omitempty"`
	PaymentID int64 `json:"payment_id,omitempty"`
	// FindingID is the finding this event opened, if any.
	FindingID int64 `json:"finding_id,omitempty"`
}

// EventProcessor records a Stripe event exactly once (deduplicated by event
// id) and applies it through the canonical writer, in one transaction. The
// webhook endpoint and the events catch-up both call it. An error means
// nothing was recorded and the event should be tried again later.
type EventProcessor interface {
	ProcessEvent(ctx context.Context, ev Event) (EventResult, error)
}

// ErrEventRefused matches every *EventError.
var ErrEventRefused = errors.New("malformed event")

// Is makes errors.Is(err, ErrEventRefused) true.
func (e *EventError) Is(target error) bool { return target == ErrEventRefused }
