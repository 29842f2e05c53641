package payrecon

import "slices"

// Command names a state transition of a payment. Repair commands travel
// through the outbox as outbox.event_type; webhooks map to the same commands,
// so both roads end in the same transition: the PostgreSQL function
// payrecon_transition, which the webhook's statement and the repair's
// statement both call.
type Command string

// The commands the canonical writer applies.
const (
	// ApplyPaymentSucceeded moves a pending payment to paid.
	ApplyPaymentSucceeded Command = "ApplyPaymentSucceeded"
	// ApplyPaymentCanceled moves a pending payment to failed (the intent was
	// canceled).
	ApplyPaymentCanceled Command = "ApplyPaymentCanceled"
	// ApplyPaymentFailed moves a pending payment to failed (an attempt
	// failed). Only webhooks send it; the sweep never does, because a failed
	// attempt leaves the intent in requires_payment_method, which the
	// decision table counts as in sync with pending.
	ApplyPaymentFailed Command = "ApplyPaymentFailed"
)

// Transition is one row of the transition table: a command moves a payment
// from one of From to To, and does nothing in any other state.
type Transition struct {
	Command Command       `json:"command"`
	From    []LocalStatus `json:"from"`
	To      LocalStatus   `json:"to"`
}

// transitions is the one transition table. No transition leads back to
// pending, so a late or repeated command can never move a payment backwards.
var transitions = []Transition{
	{ApplyPaymentSucceeded, []LocalStatus{StatusPending}, StatusPaid},
	{ApplyPaymentCanceled, []LocalStatus{StatusPending}, StatusFailed},
	{ApplyPaymentFailed, []LocalStatus{StatusPending}, StatusFailed},
}

// Transitions returns a copy of the transition table.
func Transitions() []Transition {
	out := make([]Transition, len(transitions))
	for i, t := range transitions {
		t.From = append([]LocalStatus(nil), t.From...)
		out[i] = t
	}
	return out
}

// TransitionFor returns the transition a command performs, and false for a
// command the writer does not know.
func TransitionFor(c Command) (Transition, bool) {
	for _, t := range transitions {
		if t.Command == c {
			return t, true
		}
	}
	return Transition{}, false
}

// Allows reports whether the transition applies to a payment in status s.
func (t Transition) Allows(s LocalStatus) bool {
	for _, f := range t.From {
		if f == s {
			return true
		}
	}
	return false
}

// Stripe webhook event types that map onto commands.
const (
	EventPaymentIntentSucceeded     = "payment_intent.succeeded"
	EventPaymentIntentCanceled      = "payment_intent.canceled"
	EventPaymentIntentPaymentFailed = "payment_intent.payment_failed"
)

// CommandForEvent returns the command a Stripe event type maps to, and false
// for event types that are recorded without acting.
func CommandForEvent(eventType string) (Command, bool) {
	switch eventType {
	case EventPaymentIntentSucceeded:
		return ApplyPaymentSucceeded, true
	case EventPaymentIntentCanceled:
		return ApplyPaymentCanceled, true
	case EventPaymentIntentPaymentFailed:
		return ApplyPaymentFailed, true
	}
	return "", false
}

// Outcome is what the canonical writer did with one command.
type Outcome string

// Writer outcomes.
const (
	// Applied: the payment moved from one of From to To.
	Applied Outcome = "applied"
	// AlreadyInTarget: the payment was already in To; nothing changed.
	AlreadyInTarget Outcome = "already_in_target"
	// MovedElsewhere: the payment is in a state the command does not
	// transition from, and not in its target; nothing changed.
	MovedElsewhere Outcome = "moved_elsewhere"
	// PaymentMissing: no payment with that id (or PaymentIntent id).
	PaymentMissing Outcome = "payment_missing"
	// IntentMismatch: the command was judged for one PaymentIntent and the
	// payment now records another (the application re-pointed the row);
	// nothing changed.
	IntentMismatch Outcome = "intent_mismatch"
)

// Outcomes lists every writer outcome.
var Outcomes = []Outcome{Applied, AlreadyInTarget, MovedElsewhere, PaymentMissing, IntentMismatch}

// Valid reports whether o is one of Outcomes.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes, o) }

// Resolution says why a finding was closed.
type Resolution string

// Finding resolutions.
const (
	// ResolvedRepaired: the repair command moved the payment to its target.
	ResolvedRepaired Resolution = "repaired"
	// ResolvedAlreadyInTarget: when the repair ran, the payment was already in
	// the command's target state (a webhook got there first).
	ResolvedAlreadyInTarget Resolution = "already_in_target"
	// ResolvedHealed: a later sweep saw the row in sync.
	ResolvedHealed Resolution = "healed"
	// ResolvedSuperseded: a later sweep saw a different kind of drift on the
	// same row, recorded as a new finding.
	ResolvedSuperseded Resolution = "superseded"
	// ResolvedLocalRowAppeared: a missing_locally intent now has a local row.
	ResolvedLocalRowAppeared Resolution = "local_row_appeared"
	// ResolvedOperator: a person resolved it, with a note.
	ResolvedOperator Resolution = "operator"
)
