package payrecon

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// SessionStatus is the status of a Stripe Checkout Session.
type SessionStatus string

// The three Checkout Session statuses Stripe documents.
const (
	SessionOpen     SessionStatus = "open"
	SessionComplete SessionStatus = "complete"
	SessionExpired  SessionStatus = "expired"
)

// SessionStatuses lists the documented session statuses in the order of
// their life cycle.
var SessionStatuses = []SessionStatus{SessionOpen, SessionComplete, SessionExpired}

// The payment_status values of a Checkout Session Stripe documents.
const (
	SessionPaid              = "paid"
	SessionUnpaid            = "unpaid"
	SessionNoPaymentRequired = "no_payment_required"
)

// SessionPaymentStatuses lists the documented payment_status values.
var SessionPaymentStatuses = []string{SessionPaid, SessionUnpaid, SessionNoPaymentRequired}

// The Checkout Session event types payrecon applies through the canonical
// writer, matched by session id.
const (
	EventCheckoutSessionCompleted             = "checkout.session.completed"
	EventCheckoutSessionAsyncPaymentSucceeded = "checkout.session.async_payment_succeeded"
	EventCheckoutSessionAsyncPaymentFailed    = "checkout.session.async_payment_failed"
	EventCheckoutSessionExpired               = "checkout.session.expired"
)

// SessionEventTypes lists them, in the order of a session's life.
var SessionEventTypes = []string{
	EventCheckoutSessionCompleted,
	EventCheckoutSessionAsyncPaymentSucceeded,
	EventCheckoutSessionAsyncPaymentFailed,
	EventCheckoutSessionExpired,
}

// SessionID is the Checkout Session a checkout.session.* event is about
// ("" for any other event).
func (e Event) SessionID() string {
	if e.Object.Object == "checkout.session" {
		return e.Object.ID
	}
	return ""
}

// CommandForSessionEvent maps a checkout.session.* event onto the command
// the canonical writer applies to its session's row: completed with the
// money taken (payment_status paid, or no payment required) and
// async_payment_succeeded move a pending row to paid, async_payment_failed
// and expired to failed. A completion whose asynchronous payment is still
// processing (unpaid) maps onto nothing: its outcome arrives later. ok is
// false for every other event.
func CommandForSessionEvent(ev Event) (Command, bool) {
	if ev.SessionID() == "" {
		return "", false
	}
	switch ev.Type {
	case EventCheckoutSessionCompleted:
		if ev.Object.PaymentStatus == SessionPaid || ev.Object.PaymentStatus == SessionNoPaymentRequired {
			return ApplyPaymentSucceeded, true
		}
	case EventCheckoutSessionAsyncPaymentSucceeded:
		return ApplyPaymentSucceeded, true
	case EventCheckoutSessionAsyncPaymentFailed:
		return ApplyPaymentFailed, true
	case EventCheckoutSessionExpired:
		return ApplyPaymentCanceled, true
	}
	return "", false
}

// ObservedSessionOpen is what the sweep records as a session row's observed
// status (payments.observed_external_status) while its Checkout Session is
// open: a pseudo status like NotFound, never a PaymentIntent's.
const ObservedSessionOpen StripeStatus = "(session_open)"

// Session is the part of a Stripe Checkout Session the reconciler reads:
// its status, its payment_status, when it expires and, once the customer
// confirmed it (API version 2022-08-01 and later), its PaymentIntent,
// expanded with the latest charge in the same request.
type Session struct {
	ID            string        `json:"id"`
	Status        SessionStatus `json:"status"`
	PaymentStatus string        `json:"payment_status"`
	Created       time.Time     `json:"created"`
	ExpiresAt     time.Time     `json:"expires_at"`
	// PaymentIntentID is the session's PaymentIntent ("" while it has
	// none); PaymentIntent is that intent as read (expanded), nil when the
	// session has none or it came back as an id only.
	PaymentIntentID string  `json:"payment_intent_id,omitempty"`
	PaymentIntent   *Intent `json:"payment_intent,omitempty"`
	// ReadAt is set by the sweep, as Intent.ReadAt is.
	ReadAt time.Time `json:"-"`
}

// SessionPage is one page of a list of sessions; HasMore says another page
// follows.
type SessionPage struct {
	Sessions []Session
	HasMore  bool
}

// SessionGateway is the boundary to Stripe for Checkout Sessions: the sweep
// uses it, when its Gateway implements it too, for the rows that record a
// session and no PaymentIntent. RetrieveSession reads
// GET /v1/checkout/sessions/{id} with expand[]=payment_intent.latest_charge;
// ListSessions lists sessions by creation time (ListQuery, newest first, 100
// per request) with the same expansion under data. Errors are mapped as
// Gateway's are.
type SessionGateway interface {
	RetrieveSession(ctx context.Context, id string) (Session, error)
	ListSessions(ctx context.Context, q ListQuery) (SessionPage, error)
}

// SessionSide is what a Checkout Session gives the decision table and the
// money rules as the Stripe side of a session row.
type SessionSide string

// The sides a session can give.
const (
	// SideInFlight: not judged now (the customer may still pay).
	SideInFlight SessionSide = "in_flight"
	// SideCanceled: judged as a canceled PaymentIntent.
	SideCanceled SessionSide = "canceled"
	// SideSucceeded: judged as a succeeded PaymentIntent, with no money to
	// compare (no payment was required).
	SideSucceeded SessionSide = "succeeded"
	// SideIntent: judged by the session's PaymentIntent, its status and its
	// money, exactly as an intent row.
	SideIntent SessionSide = "its PaymentIntent"
	// SideUnknown: judged as a status payrecon does not know.
	SideUnknown SessionSide = "(unknown)"
)

// Wildcards and the two expiry cases of the session table.
const (
	SessionAny          = "any"
	SessionBeforeExpiry = "not passed"
	SessionAfterExpiry  = "passed"
)

// SessionCell is one rule of the session table: the first rule whose
// status, payment_status, PaymentIntent (yes, no or any) and expires_at
// (passed, not passed or any) match a session gives its side.
type SessionCell struct {
	Status        SessionStatus `json:"status"`
	PaymentStatus string        `json:"payment_status"`
	Intent        string        `json:"payment_intent"`
	Expiry        string        `json:"expires_at"`
	Side          SessionSide   `json:"side"`
	Reason        string        `json:"reason"`
}

// sessionTable is the single source of the session verdict, its tests and
// its documentation (FormatSessionTable). Order matters: the first match
// wins.
var sessionTable = []SessionCell{
	{SessionOpen, SessionAny, SessionAny, SessionBeforeExpiry, SideInFlight, "the customer may still pay: never judged before the session expires"},
	{SessionOpen, SessionAny, SessionAny, SessionAfterExpiry, SideInFlight, "past expires_at, but Stripe has not expired it yet (it does within minutes): judged once it has"},
	{SessionComplete, SessionAny, "yes", SessionAny, SideIntent, "judged by its PaymentIntent's status and money (an asynchronous payment method stays processing, in_flight, until it settles)"},
	{SessionComplete, SessionNoPaymentRequired, "no", SessionAny, SideSucceeded, "nothing to pay (a 100 % discount): complete counts as succeeded, with no money to compare"},
	{SessionComplete, SessionAny, "no", SessionAny, SideUnknown, "complete without a PaymentIntent (a subscription or setup session?): payrecon cannot judge it"},
	{SessionExpired, SessionAny, "yes", SessionAny, SideIntent, "a payment was attempted: judged by its PaymentIntent (Stripe cancels it with the session)"},
	{SessionExpired, SessionAny, "no", SessionAny, SideCanceled, "expired before the customer paid: counts as a canceled PaymentIntent"},
	{SessionStatus(Unknown), SessionAny, SessionAny, SessionAny, SideUnknown, "a session status payrecon does not know"},
}

// SessionTable returns a copy of the session table, in order.
func SessionTable() []SessionCell { return append([]SessionCell(nil), sessionTable...) }

// SessionRule returns the rule of the session table that decides s at now:
// the first that matches. A status Stripe may add in the future matches the
// (unknown) rule. It is pure and total.
func SessionRule(s Session, now time.Time) SessionCell {
	status := s.Status
	if !knownSessionStatus(status) {
		status = SessionStatus(Unknown)
	}
	intent := "no"
	if s.PaymentIntentID != "" || s.PaymentIntent != nil {
		intent = "yes"
	}
	expiry := SessionBeforeExpiry
	if !s.ExpiresAt.IsZero() && !now.Before(s.ExpiresAt) {
		expiry = SessionAfterExpiry
	}
	for _, c := range sessionTable {
		if c.Status == status && matches(c.PaymentStatus, s.PaymentStatus) && matches(c.Intent, intent) && matches(c.Expiry, expiry) {
			return c
		}
	}
	// Unreachable: the (unknown) rule matches everything; kept total.
	return sessionTable[len(sessionTable)-1]
}

func matches(rule, v string) bool { return rule == SessionAny || rule == v }

func knownSessionStatus(s SessionStatus) bool {
	for _, k := range SessionStatuses {
		if s == k {
			return true
		}
	}
	return false
}

// SessionJudgment is what a session row's Checkout Session gives the sweep:
// the status to record as observed, the decision on the row, and the
// PaymentIntent the money rules judge (nil when the side is not the
// session's PaymentIntent).
type SessionJudgment struct {
	Rule     SessionCell
	Observed StripeStatus
	Decision Decision
	Intent   *Intent
}

// JudgeSession decides a session row: the session table gives the Stripe
// side, and the one decision table (Classify) judges it against the local
// status; the money rules then judge Intent when it is set. A side that is
// the session's PaymentIntent with no expanded intent (an id only) has no
// status to judge: Observed is empty and the caller must read the intent or
// call the row unverifiable.
func JudgeSession(local LocalStatus, s Session, now time.Time) SessionJudgment {
	rule := SessionRule(s, now)
	j := SessionJudgment{Rule: rule}
	prefix := fmt.Sprintf("checkout session %s is %s", s.ID, orUnknown(string(s.Status)))
	switch rule.Side {
	case SideInFlight:
		j.Observed = ObservedSessionOpen
		j.Decision = inFlight(prefix + ": " + rule.Reason)
		return j
	case SideCanceled:
		j.Observed = IntentCanceled
	case SideSucceeded:
		j.Observed = IntentSucceeded
	case SideUnknown:
		j.Observed = Unknown
	case SideIntent:
		if s.PaymentIntent == nil || s.PaymentIntent.Status == "" {
			return j
		}
		in := *s.PaymentIntent
		j.Intent = &in
		j.Observed = in.Status
		prefix += " with PaymentIntent " + in.ID
	}
	j.Decision = Classify(local, j.Observed)
	j.Decision.Reason = prefix + " (" + string(rule.Side) + "): " + j.Decision.Reason
	return j
}

func orUnknown(s string) string {
	if s == "" {
		return "(no status)"
	}
	return s
}

// FormatSessionTable renders the session table as a Markdown table: the
// second table of `payrecon classify --table`, copied into the README
// between BeginSessionTableMarker and EndSessionTableMarker (a test
// compares them).
func FormatSessionTable() string {
	var b strings.Builder
	b.WriteString("| session status | payment_status | PaymentIntent | expires_at | Stripe side | why |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, c := range sessionTable {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", c.Status, c.PaymentStatus, c.Intent, c.Expiry, c.Side, c.Reason)
	}
	return b.String()
}

// Markers around the generated session table in the README.
const (
	BeginSessionTableMarker = "<!-- session-table:begin (generated by `payrecon classify --table`; a test checks it) -->"
	EndSessionTableMarker   = "<!-- session-table:end -->"
)
