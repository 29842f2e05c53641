package stripesim

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/payrecon/payrecon"
)

// Event types of charges and disputes, recorded by Refund and Dispute.
const (
	EventChargeRefunded       = "charge.refunded"
	EventChargeDisputeCreated = "charge.dispute.created"
)

// Money is what SetMoney changes; zero fields keep their current value.
type Money struct {
	// Amount is the amount the intent asks for, in minor units.
	Amount int64
	// AmountReceived is what the charge captures (or captured) when the
	// intent succeeds; less than Amount is "captured for less".
	AmountReceived int64
	// Currency is stored lower case.
	Currency string
}

// SetMoney changes the amount, the amount received and the currency of
// intent id without recording an event (Stripe sends none for a change made
// before the payment, and an amount never changes after it). An intent that
// received its whole amount goes on receiving all of it when only Amount
// changes. It fails with
// ErrNoSuchIntent, and with ErrInvalidAmount for a negative amount or an
// amount received below what was already refunded.
func (s *Server) SetMoney(id string, m Money) error {
	if m.Amount < 0 || m.AmountReceived < 0 {
		return fmt.Errorf("set money of intent %q: %w", id, ErrInvalidAmount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.intents.byID[id]
	if !ok {
		return fmt.Errorf("set money of intent %q: %w", id, ErrNoSuchIntent)
	}
	received := r.received
	if m.AmountReceived != 0 {
		received = m.AmountReceived
	} else if m.Amount != 0 && r.received == r.amount {
		received = m.Amount // it captured the whole amount, and still does
	}
	if received < r.refunded {
		return fmt.Errorf("set money of intent %q: %d received but %d refunded: %w", id, received, r.refunded, ErrInvalidAmount)
	}
	if m.Amount != 0 {
		r.amount = m.Amount
	}
	if m.Currency != "" {
		r.currency = strings.ToLower(m.Currency)
	}
	r.received = received
	return nil
}

// Refund refunds amount (minor units) of the charge of intent id, as a
// refund made in the Dashboard or by another system does; 0 refunds all that
// is left. Refunds add up; the charge is refunded (Stripe's refunded: true)
// once the whole captured amount is. It records a charge.refunded event whose
// data.object is the Charge after the refund, and returns the event's id.
//
// It fails with ErrNoSuchIntent, ErrNoCharge (the intent has not succeeded),
// ErrInvalidAmount (negative), ErrAlreadyRefunded (nothing left),
// ErrRefundTooLarge (more than is left) or ErrChargeDisputed, as Stripe
// refuses those refunds.
func (s *Server) Refund(id string, amount int64) (string, error) {
	if amount < 0 {
		return "", fmt.Errorf("refund intent %q: %w", id, ErrInvalidAmount)
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.charged(id)
	if err != nil {
		return "", fmt.Errorf("refund: %w", err)
	}
	left := r.received - r.refunded
	switch {
	case r.disputed:
		return "", fmt.Errorf("refund charge %s: %w", r.chargeID(), ErrChargeDisputed)
	case left <= 0:
		return "", fmt.Errorf("refund charge %s: %w", r.chargeID(), ErrAlreadyRefunded)
	case amount > left:
		return "", fmt.Errorf("refund %d of charge %s, %d left: %w", amount, r.chargeID(), left, ErrRefundTooLarge)
	case amount == 0:
		amount = left
	}
	previous := map[string]any{"amount_refunded": r.refunded}
	r.refunded += amount
	if r.refunded == r.received {
		previous["refunded"] = false
	}
	return s.recordEvent(EventChargeRefunded, r, r.chargeJSON(), previous, now), nil
}

// Dispute opens a dispute (a chargeback) on the charge of intent id, for the
// amount captured less what was refunded. It records a charge.dispute.created
// event whose data.object is the Dispute, and returns the event's id. It
// fails with ErrNoSuchIntent, ErrNoCharge or, for a charge already disputed,
// ErrChargeDisputed.
func (s *Server) Dispute(id string) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.charged(id)
	if err != nil {
		return "", fmt.Errorf("dispute: %w", err)
	}
	if r.disputed {
		return "", fmt.Errorf("dispute charge %s: %w", r.chargeID(), ErrChargeDisputed)
	}
	r.disputed = true
	d := disputeJSON{
		ID:                  "dp_" + strings.TrimPrefix(r.id, "pi_"),
		Object:              "dispute",
		Amount:              r.received - r.refunded,
		BalanceTransactions: []string{},
		Charge:              r.chargeID(),
		Created:             now.Unix(),
		Currency:            r.currency,
		Metadata:            map[string]string{},
		PaymentIntent:       r.id,
		Reason:              "general",
		Status:              "needs_response",
	}
	return s.recordEvent(EventChargeDisputeCreated, r, d, nil, now), nil
}

// charged returns the record of intent id if it has a charge; s.mu must be
// held.
func (s *Server) charged(id string) (*record, error) {
	r, ok := s.intents.byID[id]
	if !ok {
		return nil, fmt.Errorf("intent %q: %w", id, ErrNoSuchIntent)
	}
	if !r.hasCharge() {
		return nil, fmt.Errorf("intent %q is %s: %w", id, r.status, ErrNoCharge)
	}
	return r, nil
}

// hasCharge: only succeeded intents have a charge in the simulator.
func (r *record) hasCharge() bool { return r.status == payrecon.IntentSucceeded }

// chargeID is the id of the intent's charge: "ch_" + the intent id's suffix.
func (r *record) chargeID() string { return "ch_" + strings.TrimPrefix(r.id, "pi_") }

// chargeJSON is a Charge as Stripe renders it (the fields payrecon and a
// reader of a webhook may look at).
type chargeJSON struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	AmountCaptured int64             `json:"amount_captured"`
	AmountRefunded int64             `json:"amount_refunded"`
	Captured       bool              `json:"captured"`
	Created        int64             `json:"created"`
	Currency       string            `json:"currency"`
	Disputed       bool              `json:"disputed"`
	Livemode       bool              `json:"livemode"`
	Metadata       map[string]string `json:"metadata"`
	Paid           bool              `json:"paid"`
	PaymentIntent  string            `json:"payment_intent"`
	PaymentMethod  string            `json:"payment_method"`
	Refunded       bool              `json:"refunded"`
	Status         string            `json:"status"`
}

func (r *record) chargeJSON() *chargeJSON {
	created := r.chargedAt
	if created == 0 {
		created = r.created
	}
	return &chargeJSON{
		ID:             r.chargeID(),
		Object:         "charge",
		Amount:         r.amount,
		AmountCaptured: r.received,
		AmountRefunded: r.refunded,
		Captured:       true,
		Created:        created,
		Currency:       r.currency,
		Disputed:       r.disputed,
		Metadata:       map[string]string{},
		Paid:           true,
		PaymentIntent:  r.id,
		PaymentMethod:  "pm_" + strings.TrimPrefix(r.id, "pi_"),
		Refunded:       r.received > 0 && r.refunded >= r.received,
		Status:         "succeeded",
	}
}

// disputeJSON is a Dispute as Stripe renders it.
type disputeJSON struct {
	ID                  string            `json:"id"`
	Object              string            `json:"object"`
	Amount              int64             `json:"amount"`
	BalanceTransactions []string          `json:"balance_transactions"`
	Charge              string            `json:"charge"`
	Created             int64             `json:"created"`
	Currency            string            `json:"currency"`
	IsChargeRefundable  bool              `json:"is_charge_refundable"`
	Livemode            bool              `json:"livemode"`
	Metadata            map[string]string `json:"metadata"`
	PaymentIntent       string            `json:"payment_intent"`
	Reason              string            `json:"reason"`
	Status              string            `json:"status"`
}

// encodeObject renders an event's data.object or previous_attributes.
func (s *Server) encodeObject(v any, intentID string) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("stripesim: encode event object", "intent_id", intentID, "error", err)
		return json.RawMessage("{}")
	}
	return b
}
