package payrecon

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Intent is the part of a Stripe PaymentIntent the reconciler reads. The
// status decides the status verdict; the money fields and the latest charge
// are what the money checks compare with the local amount and currency.
type Intent struct {
	ID      string       `json:"id"`
	Status  StripeStatus `json:"status"`
	Created time.Time    `json:"created"`
	// Amount is the amount the intent asks for, in the currency's minor
	// units (cents; yen for JPY): Stripe's amount.
	Amount int64 `json:"amount"`
	// AmountReceived is what was actually collected, in minor units:
	// Stripe's amount_received, 0 until the intent succeeds and less than
	// Amount when it was captured for less.
	AmountReceived int64 `json:"amount_received"`
	// Currency is the ISO currency code exactly as Stripe gives it, lower
	// case ("usd", "jpy"); compare it case-insensitively.
	Currency string `json:"currency"`
	// Metadata is the intent's metadata (never nil when read from Stripe,
	// which always sends an object), e.g. to tell payrecon's intents from
	// those other systems create in the same account.
	Metadata map[string]string `json:"metadata,omitempty"`
	// LatestCharge is the intent's latest charge, read in the same request
	// (expanded); nil when the intent has no charge (nothing was ever
	// attempted or captured). See Charge.Expanded for a charge that came
	// back as an id only.
	LatestCharge *Charge `json:"latest_charge,omitempty"`
	// ReadAt is set by the sweep, not by the gateway: the database's time
	// taken before the request that returned the intent (Check.ReadAt).
	ReadAt time.Time `json:"-"`
}

// Charge is the part of a Stripe Charge the money checks read: what was
// captured, what has been refunded since, and whether the cardholder
// disputed it.
type Charge struct {
	// ID is the charge's id ("ch_…"), to name it in findings.
	ID string `json:"id"`
	// AmountCaptured is what the charge captured, in minor units: Stripe's
	// amount_captured (0 while only authorised).
	AmountCaptured int64 `json:"amount_captured"`
	// AmountRefunded is the total refunded so far, in minor units, partial
	// refunds summed: Stripe's amount_refunded.
	AmountRefunded int64 `json:"amount_refunded"`
	// Refunded is true once the charge is fully refunded: Stripe's
	// refunded.
	Refunded bool `json:"refunded"`
	// Disputed is true once the cardholder opened a dispute (a chargeback):
	// Stripe's disputed.
	Disputed bool `json:"disputed"`
	// Currency is the charge's currency as Stripe gives it, lower case.
	Currency string `json:"currency"`
	// Created is when the charge was made, to date what findings report.
	Created time.Time `json:"created"`
}

// Expanded reports whether the charge was read in full. Stripe always
// expands it when asked, so a charge that came back as an id only (every
// other field zero) means the request lost its expand parameter on the way
// (a proxy, a mock): its money fields were not read and must not be taken
// for "not refunded, not disputed".
func (c *Charge) Expanded() bool { return c != nil && !c.Created.IsZero() }

// ListQuery selects PaymentIntents by creation time, Stripe's list filter:
// created ≥ CreatedGTE and ≤ CreatedLTE (whole seconds), newest first,
// pages of up to Limit (at most 100), continuing after StartingAfter.
type ListQuery struct {
	CreatedGTE    time.Time
	CreatedLTE    time.Time
	StartingAfter string
	Limit         int
}

// IntentPage is one page of a list; HasMore says another page follows.
type IntentPage struct {
	Intents []Intent
	HasMore bool
}

// Gateway is the boundary to Stripe that the sweep depends on. Mapping the
// SDK's errors is the implementation's job: it returns ErrNotFound when the
// intent does not exist, an error matching ErrUnavailable (usually an
// *UnavailableError) when Stripe could not be asked, and an error matching
// ErrConfig (usually a *ConfigError) when no request can succeed until a
// person changes the configuration.
type Gateway interface {
	RetrieveIntent(ctx context.Context, id string) (Intent, error)
	ListIntents(ctx context.Context, q ListQuery) (IntentPage, error)
}

// EventSource lists Stripe events (GET /v1/events), the way to recover
// webhooks an endpoint missed: Stripe keeps events for 30 days. It is an
// interface of its own, not part of Gateway, so the sweep's fakes need not
// implement it. Errors are mapped as Gateway's are.
type EventSource interface {
	ListEvents(ctx context.Context, q EventQuery) (EventPage, error)
}

// EventQuery selects events, Stripe's list filter. Stripe lists newest
// first, whichever cursor is used:
//
//   - no cursor: the newest Limit events matching the filter;
//   - StartingAfter = an event id: the page of events immediately older
//     than it (walking back in time), newest first; HasMore says older ones
//     remain;
//   - EndingBefore = an event id: the page of events immediately newer than
//     it, still newest first within the page; HasMore says newer ones
//     remain beyond the page.
//
// So a reader that walks forward in time (oldest first, as the events
// catch-up does) starts from a known event, asks EndingBefore = the newest
// event it has, processes the page from its last element to its first, and
// asks again with EndingBefore = the page's first (newest) event while
// HasMore. At most one of StartingAfter and EndingBefore may be set, and the
// cursor must be an event Stripe still keeps (30 days), or the request is
// refused.
type EventQuery struct {
	// Types keeps only events of these types (at most 20); empty means
	// every type.
	Types []string
	// CreatedGTE keeps events created at or after it (whole seconds,
	// truncated); zero means unbounded.
	CreatedGTE time.Time
	// CreatedLT keeps events created before it (whole seconds, truncated);
	// zero means unbounded.
	CreatedLT time.Time
	// StartingAfter continues towards older events, after this event id.
	StartingAfter string
	// EndingBefore continues towards newer events, before this event id.
	EndingBefore string
	// Limit is the page size, 1..100; anything else means 100.
	Limit int
}

// EventPage is one page of events, newest first (also with EndingBefore).
type EventPage struct {
	Events []RawEvent
	// HasMore says another page follows in the direction of the cursor:
	// older events for StartingAfter or no cursor, newer ones for
	// EndingBefore.
	HasMore bool
}

// RawEvent is one Stripe event as listed.
type RawEvent struct {
	// ID is the event id ("evt_…"), the key webhook deliveries are
	// deduplicated by.
	ID string
	// Type is the event type, e.g. "payment_intent.succeeded".
	Type string
	// Created is when Stripe created the event (whole seconds).
	Created time.Time
	// JSON is the event object exactly as Stripe sent it in the list, the
	// same shape as a webhook delivery's body, so it can go through the
	// parser the webhook endpoint uses (without the signature check: it
	// came from Stripe's API over TLS with our key).
	JSON []byte
}

// Sentinel errors of the Stripe boundary and the store.
var (
	// ErrNotFound: Stripe answered 404 resource_missing, or a local record
	// does not exist.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: Stripe could not be asked (timeout, connection error,
	// 429, 5xx). The row is unverifiable.
	ErrUnavailable = errors.New("stripe unavailable")
	// ErrConfig: a configuration error (401, 403, other 4xx). The sweep stops
	// at once and writes nothing.
	ErrConfig = errors.New("configuration error")
	// ErrConcurrentRun: another run moved the cursor first; the batch was
	// discarded.
	ErrConcurrentRun = errors.New("concurrent run moved the cursor")
	// ErrLeaseHeld: another process holds the job's lease.
	ErrLeaseHeld = errors.New("lease held by another process")
	// ErrLeaseLost: the job's lease was taken over (the holder froze past
	// the lease timeout); the batch was not committed (fencing).
	ErrLeaseLost = errors.New("lease lost to another holder")
)

// UnavailableError says why Stripe could not be asked.
type UnavailableError struct {
	// StatusCode is the HTTP status, 0 for transport errors and timeouts.
	StatusCode int
	// RateLimited is true for 429 answers.
	RateLimited bool
	// RetryAfter is Stripe's Retry-After hint, zero when absent.
	RetryAfter time.Duration
	// Err is the underlying error.
	Err error
}

func (e *UnavailableError) Error() string {
	switch {
	case e.RateLimited:
		return fmt.Sprintf("stripe unavailable: rate limited (429): %v", e.Err)
	case e.StatusCode != 0:
		return fmt.Sprintf("stripe unavailable: HTTP %d: %v", e.StatusCode, e.Err)
	}
	return fmt.Sprintf("stripe unavailable: %v", e.Err)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// ConfigError is a configuration problem found at the Stripe boundary: a bad
// or revoked key (401), a restricted key missing a permission (403), or a
// request Stripe rejects (other 4xx). It never contains the secret key.
type ConfigError struct {
	StatusCode int
	// Cause is a one-line description of what is wrong and how to fix it.
	Cause string
}

func (e *ConfigError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("stripe configuration error (HTTP %d): %s", e.StatusCode, e.Cause)
	}
	return "stripe configuration error: " + e.Cause
}

// Is makes errors.Is(err, ErrConfig) true.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Clock gives the current time. Only SystemClock calls time.Now; tests inject
// their own.
type Clock interface {
	Now() time.Time
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d, or until ctx ends (then it returns ctx's error). It is the
// default wait of everything that backs off; tests inject their own.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
