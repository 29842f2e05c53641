package payrecon

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Intent is the part of a Stripe PaymentIntent the reconciler reads.
type Intent struct {
	ID      string       `json:"id"`
	Status  StripeStatus `json:"status"`
	Created time.Time    `json:"created"`
}

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
