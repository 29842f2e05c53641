package payrecon

import (
	"fmt"
	"strings"
)

// Verdict is what the reconciler concludes about one row.
type Verdict string

// The verdicts, with the seed's names.
const (
	// InSync: local and Stripe agree.
	InSync Verdict = "in_sync"
	// InFlight: changed locally within the grace window, or Stripe is still
	// moving; not judged now.
	InFlight Verdict = "in_flight"
	// Repairable: a repair command may go to the canonical writer.
	Repairable Verdict = "repairable"
	// NeedsReview: never fixed automatically; the drift involves money or
	// shipping.
	NeedsReview Verdict = "needs_review"
	// Unverifiable: Stripe could not be asked; never counted as healthy.
	Unverifiable Verdict = "unverifiable"
)

// Verdicts lists every verdict in report order.
var Verdicts = []Verdict{InSync, InFlight, Repairable, NeedsReview, Unverifiable}

// Kind names a kind of drift. A finding records one kind for one payment.
type Kind string

// The finding kinds. The first four are the seed's.
const (
	// KindMissedSuccess: pending locally, succeeded in Stripe; a
	// payment_intent.succeeded webhook was lost.
	KindMissedSuccess Kind = "missed_success"
	// KindMissedCancel: pending locally, canceled in Stripe; a
	// payment_intent.canceled webhook was lost.
	KindMissedCancel Kind = "missed_cancel"
	// KindPaidLocallyNotExternally: marked paid (and perhaps shipped) but
	// Stripe never took the money.
	KindPaidLocallyNotExternally Kind = "paid_locally_not_externally"
	// KindMissingExternally: the row's PaymentIntent does not exist in Stripe.
	KindMissingExternally Kind = "missing_externally"
	// KindFailedLocallyPaidExternally: marked failed locally, but Stripe took
	// the money (the customer retried and paid).
	KindFailedLocallyPaidExternally Kind = "failed_locally_paid_externally"
	// KindUnknownStatus: a status payrecon does not know, on either side.
	KindUnknownStatus Kind = "unknown_status"
	// KindMissingLocally: a PaymentIntent exists in Stripe with no local row.
	KindMissingLocally Kind = "missing_locally"
	// KindInvalidLocalRow: the payments row cannot be checked at all (its
	// stripe_payment_intent_id is NULL or empty, and it records no Checkout
	// Session either). Not a drift between two
	// sides but a fault in the local row; the sweep records it and goes on.
	KindInvalidLocalRow Kind = "invalid_local_row"
	// KindAccountMismatch: a Stripe event for the row's PaymentIntent came
	// from another account than the one the row records (Connect): it was
	// not applied.
	KindAccountMismatch Kind = "account_mismatch"
)

// Kinds lists every finding kind in documentation order: the status kinds
// of the decision table, then the money kinds (MoneyKinds), stuck_in_flight,
// the settlement kinds (SettlementKinds) and invalid_local_row.
var Kinds = []Kind{
	KindMissedSuccess,
	KindMissedCancel,
	KindPaidLocallyNotExternally,
	KindFailedLocallyPaidExternally,
	KindMissingExternally,
	KindMissingLocally,
	KindUnknownStatus,
	KindAmountMismatch,
	KindCurrencyMismatch,
	KindRefundedExternally,
	KindPartiallyRefunded,
	KindDisputed,
	KindStuckInFlight,
	KindSettledNotPaidLocally,
	KindSettledAmountMismatch,
	KindPaidNotSettled,
	KindInvalidLocalRow,
	KindAccountMismatch,
}

// InvalidLocalRow is the decision on a payments row that names no
// PaymentIntent (stripe_payment_intent_id NULL or empty) and no Checkout
// Session (the session column absent, NULL or empty): needs_review,
// without asking Stripe, since there is nothing to ask about.
func InvalidLocalRow() Decision {
	return review(KindInvalidLocalRow, "the payments row has no stripe_payment_intent_id (NULL or empty) and no Checkout Session (--session-column): it cannot be checked against Stripe")
}

// Decision is the verdict on one (local status, Stripe status) pair: the
// finding kind to record (empty when none), the repair command to queue
// (empty unless the verdict is Repairable), and a one-line reason.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Kind    Kind    `json:"kind,omitempty"`
	Command Command `json:"command,omitempty"`
	Reason  string  `json:"reason"`
}

// Cell is one entry of the decision table.
type Cell struct {
	Local  LocalStatus  `json:"local_status"`
	Stripe StripeStatus `json:"stripe_status"`
	Decision
}

func inSync(reason string) Decision { return Decision{Verdict: InSync, Reason: reason} }
func inFlight(reason string) Decision {
	return Decision{Verdict: InFlight, Reason: reason}
}
func review(k Kind, reason string) Decision {
	return Decision{Verdict: NeedsReview, Kind: k, Reason: reason}
}
func repair(k Kind, c Command, reason string) Decision {
	return Decision{Verdict: Repairable, Kind: k, Command: c, Reason: reason}
}

// decisionTable is the single source of the classifier, the tests and the
// documentation: every local status × every Stripe status, plus NotFound and
// Unknown. TestDecisionTableComplete fails if a cell is missing.
var decisionTable = []Cell{
	{StatusPending, IntentRequiresPaymentMethod, inSync("awaiting payment: no attempt yet, or an attempt failed and the customer may retry")},
	{StatusPending, IntentRequiresConfirmation, inFlight("the customer is still paying; the outcome arrives by webhook")},
	{StatusPending, IntentRequiresAction, inFlight("waiting for the customer (3-D Secure or similar)")},
	{StatusPending, IntentProcessing, inFlight("Stripe is still processing the payment")},
	{StatusPending, IntentRequiresCapture, inFlight("authorised, waiting for the merchant to capture; money not yet taken")},
	{StatusPending, IntentCanceled, repair(KindMissedCancel, ApplyPaymentCanceled, "canceled in Stripe: the payment_intent.canceled webhook was lost")},
	{StatusPending, IntentSucceeded, repair(KindMissedSuccess, ApplyPaymentSucceeded, "paid in Stripe: the payment_intent.succeeded webhook was lost")},
	{StatusPending, NotFound, review(KindMissingExternally, "no such PaymentIntent in Stripe: wrong id, wrong account or a half-finished checkout")},
	{StatusPending, Unknown, review(KindUnknownStatus, "Stripe reports a status payrecon does not know")},

	{StatusPaid, IntentRequiresPaymentMethod, review(KindPaidLocallyNotExternally, "marked paid, but Stripe is still waiting for a payment method")},
	{StatusPaid, IntentRequiresConfirmation, review(KindPaidLocallyNotExternally, "marked paid, but the payment was never confirmed in Stripe")},
	{StatusPaid, IntentRequiresAction, review(KindPaidLocallyNotExternally, "marked paid, but Stripe is waiting for the customer to authenticate")},
	{StatusPaid, IntentProcessing, review(KindPaidLocallyNotExternally, "marked paid before Stripe finished processing; it may still fail")},
	{StatusPaid, IntentRequiresCapture, review(KindPaidLocallyNotExternally, "marked paid, but the authorisation was never captured: no money taken")},
	{StatusPaid, IntentCanceled, review(KindPaidLocallyNotExternally, "marked paid, but canceled in Stripe: no money taken")},
	{StatusPaid, IntentSucceeded, inSync("paid on both sides")},
	{StatusPaid, NotFound, review(KindMissingExternally, "marked paid, but no such PaymentIntent exists in Stripe")},
	{StatusPaid, Unknown, review(KindUnknownStatus, "marked paid; Stripe reports a status payrecon does not know")},

	{StatusFailed, IntentRequiresPaymentMethod, inSync("the attempt failed and Stripe returned the intent to requires_payment_method")},
	{StatusFailed, IntentRequiresConfirmation, inFlight("the customer is retrying after the failure; judged when Stripe settles")},
	{StatusFailed, IntentRequiresAction, inFlight("the customer is retrying and must authenticate; judged when Stripe settles")},
	{StatusFailed, IntentProcessing, inFlight("a retry is processing; if it succeeds the next sweep flags it for review")},
	{StatusFailed, IntentRequiresCapture, inFlight("a retry was authorised; it is captured (then reviewed) or expires (then in sync)")},
	{StatusFailed, IntentCanceled, inSync("failed locally, canceled in Stripe")},
	{StatusFailed, IntentSucceeded, review(KindFailedLocallyPaidExternally, "money taken on an order marked failed: fulfil it or refund it")},
	{StatusFailed, NotFound, review(KindMissingExternally, "marked failed; no such PaymentIntent exists in Stripe")},
	{StatusFailed, Unknown, review(KindUnknownStatus, "marked failed; Stripe reports a status payrecon does not know")},
}

type cellKey struct {
	local  LocalStatus
	stripe StripeStatus
}

var decisionIndex = func() map[cellKey]Decision {
	m := make(map[cellKey]Decision, len(decisionTable))
	for _, c := range decisionTable {
		m[cellKey{c.Local, c.Stripe}] = c.Decision
	}
	return m
}()

// DecisionTable returns a copy of the decision table in its documented
// order: for each local status, the seven Stripe statuses, then NotFound and
// Unknown.
func DecisionTable() []Cell {
	return append([]Cell(nil), decisionTable...)
}

// Classify is the pure decision function: from the local status and the
// PaymentIntent status Stripe reported (or NotFound) to a Decision. It is
// total: an unrecognised Stripe status is classified as Unknown, and an
// unrecognised local status is needs_review with KindUnknownStatus.
func Classify(local LocalStatus, stripe StripeStatus) Decision {
	if !local.Valid() {
		return review(KindUnknownStatus, fmt.Sprintf("local status %q is not one payrecon knows", local))
	}
	if stripe != NotFound && !stripe.Valid() {
		stripe = Unknown
	}
	return decisionIndex[cellKey{local, stripe}]
}

// FormatDecisionTable renders the table as a Markdown table. The README
// carries a copy between the markers BeginTableMarker and EndTableMarker,
// and a test fails when the two differ.
func FormatDecisionTable() string {
	var b strings.Builder
	b.WriteString("| local | Stripe | verdict | kind | repair command | why |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range decisionTable {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			c.Local, c.Stripe, c.Verdict, dash(string(c.Kind)), dash(string(c.Command)), c.Reason)
	}
	return b.String()
}

// Markers around the generated decision table in the README.
const (
	BeginTableMarker = "<!-- decision-table:begin (generated by `payrecon classify --table`; a test checks it) -->"
	EndTableMarker   = "<!-- decision-table:end -->"
)

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
