package payrecon

import (
	"context"
	"time"
)

// CatchUpEventTypes are the Stripe event types the events catch-up lists:
// the types the webhook endpoint handles (subscribe the endpoint to the
// same ones).
var CatchUpEventTypes = []string{
	EventPaymentIntentSucceeded,
	EventPaymentIntentCanceled,
	EventPaymentIntentPaymentFailed,
	EventChargeRefunded,
	EventChargeDisputeCreated,
	EventPayoutPaid,
	EventPayoutFailed,
	EventPayoutCanceled,
	EventPayoutReconciliationCompleted,
	EventCheckoutSessionCompleted,
	EventCheckoutSessionAsyncPaymentSucceeded,
	EventCheckoutSessionAsyncPaymentFailed,
	EventCheckoutSessionExpired,
}

// EventRetention is how long Stripe keeps events (and so how far back
// GET /v1/events reaches): 30 days.
const EventRetention = 30 * 24 * time.Hour

// RecentJobSuffix ends the name of a sweep job that re-verifies only the
// rows created within a recent window (run --recent): the full job's name
// plus this suffix, e.g. "payments-vs-stripe/recent".
const RecentJobSuffix = "/recent"

// EventCursor is the events catch-up's position in Stripe's event stream:
// every event of CatchUpEventTypes up to EventID (in Stripe's order) has
// been processed.
type EventCursor struct {
	Job string `json:"job"`
	// EventID is the newest event processed; "" when none has been since
	// the cursor was created or last reset: the next round starts from
	// StartFrom.
	EventID      string    `json:"event_id,omitempty"`
	EventCreated time.Time `json:"event_created,omitzero"`
	// StartFrom is where a round without EventID begins: events created at
	// or after it.
	StartFrom time.Time `json:"start_from"`
	// CheckedAt is when a round last reached the newest event Stripe
	// listed (zero: never). Every event created before it has been
	// processed, unless Stripe listed it late.
	CheckedAt time.Time `json:"checked_at,omitzero"`
}

// EventAdvance moves an events cursor past one processed event.
type EventAdvance struct {
	Job string
	// From is the cursor's event id the event was listed after ("" for the
	// first event of a walk from StartFrom); the advance is a
	// compare-and-set on it.
	From string
	// To and ToCreated are the event just processed.
	To        string
	ToCreated time.Time
	// Outcome is what processing it did (EventResult.Outcome,
	// "duplicate", or "refused" for an event that failed ParseEvent).
	Outcome string
	// Delay is the detection delay (Stripe's created → applied) of an
	// event this road recorded first; zero otherwise.
	Delay time.Duration
	Now   time.Time
	// Fence is the epoch of the job's lease the round runs under (0: no
	// lease); the advance writes nothing (ErrLeaseLost) when the lease has
	// moved on.
	Fence int64
}

// EventCursorReset restarts an events cursor from a time when its event can
// no longer be used: older than Stripe keeps, or refused by Stripe.
type EventCursorReset struct {
	Job string
	// From is the event id the cursor is at (compare-and-set).
	From string
	// StartFrom is where the next walk begins.
	StartFrom time.Time
	// LostFrom and LostTo bound the events that will never be caught up
	// (older than Stripe keeps); both zero when nothing was lost.
	LostFrom, LostTo time.Time
	// Reason says why, in a few words.
	Reason string
	Now    time.Time
}

// EventCursorStore keeps events cursors. Every write is a compare-and-set
// on the cursor's event id and fails with ErrConcurrentRun when another
// catcher moved it first. The postgres package implements it.
type EventCursorStore interface {
	// ReadEventCursor returns the job's cursor, creating it on first use
	// with StartFrom startFrom.
	ReadEventCursor(ctx context.Context, job string, startFrom, now time.Time) (EventCursor, error)
	// AdvanceEventCursor moves the cursor past one processed event.
	AdvanceEventCursor(ctx context.Context, a EventAdvance) error
	// MarkEventCursorChecked records that a round with the cursor at
	// eventID reached the newest event.
	MarkEventCursorChecked(ctx context.Context, job, eventID string, now time.Time) error
	// ResetEventCursor forgets the cursor's event and restarts it from a
	// time, recording what was lost.
	ResetEventCursor(ctx context.Context, r EventCursorReset) error
	// CountEventOutcome counts one processed event's outcome on the job's
	// cursor without moving it: an event listed late, behind the cursor,
	// or one whose advance another catcher won after this one applied it.
	CountEventOutcome(ctx context.Context, a EventAdvance) error
	// ProcessedEvents reports which of ids payrecon has processed already
	// (webhook or catch-up): the overlap re-listed behind the cursor skips
	// them without a call to the processor.
	ProcessedEvents(ctx context.Context, ids []string) (map[string]bool, error)
}
