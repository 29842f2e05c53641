package stripeapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// failure describes one failed attempt.
type failure struct {
	err       error         // what stripe-go returned
	stripeErr *stripe.Error // Stripe's JSON error, when the body was one
	status    int           // HTTP status; 0 when there was no answer
	header    http.Header   // the answer's headers; nil when there was none
	timedOut  bool          // the per-attempt timeout passed
}

func newFailure(err error, ans *answer) *failure {
	f := &failure{err: err, status: ans.status, header: ans.header}
	if errors.As(err, &f.stripeErr) {
		f.status = f.stripeErr.HTTPStatusCode
		if f.header == nil && f.stripeErr.LastResponse != nil {
			f.header = f.stripeErr.LastResponse.Header
		}
	}
	if f.status == 0 {
		// http.Client.Timeout and the like: a timeout, whatever its type.
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			f.timedOut = true
		}
	}
	return f
}

// retryable: Stripe-Should-Retry decides when present; otherwise no answer
// (transport error, timeout), an unreadable 2xx, 409, 429 and 5xx are
// retried.
func (f *failure) retryable() bool {
	switch f.header.Get("Stripe-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	if f.timedOut || f.status < 400 {
		return true
	}
	return f.status == http.StatusConflict || f.status == http.StatusTooManyRequests || f.status >= 500
}

func (f *failure) requestID() string {
	if f.stripeErr != nil && f.stripeErr.RequestID != "" {
		return f.stripeErr.RequestID
	}
	return f.header.Get("Request-Id")
}

// translate maps a final failure of operation op to ErrNotFound,
// *payrecon.UnavailableError or *payrecon.ConfigError.
func (g *Gateway) translate(op string, f *failure) error {
	switch {
	case f.status == http.StatusNotFound && f.stripeErr != nil && f.stripeErr.Code == stripe.ErrorCodeResourceMissing:
		return fmt.Errorf("%w (request %s)", payrecon.ErrNotFound, f.requestID())
	case op == opEvents && f.status == http.StatusBadRequest && f.stripeErr != nil && f.stripeErr.Code == stripe.ErrorCodeResourceMissing:
		// The cursor event is gone: Stripe keeps events for 30 days.
		return fmt.Errorf("%w: %s", payrecon.ErrNotFound, g.cause(f))
	case f.status == http.StatusUnauthorized:
		return &payrecon.ConfigError{StatusCode: f.status,
			Cause: "Stripe rejected the API key (wrong, revoked or expired, or of another account): check STRIPE_SECRET_KEY"}
	case f.status == http.StatusForbidden:
		return &payrecon.ConfigError{StatusCode: f.status, Cause: g.forbiddenCause(op, f)}
	case f.timedOut || f.status < 400 || f.status == http.StatusConflict || f.status == http.StatusTooManyRequests || f.status >= 500:
		return &payrecon.UnavailableError{
			StatusCode:  f.status,
			RateLimited: f.status == http.StatusTooManyRequests,
			RetryAfter:  g.retryAfter(f.header),
			Err:         g.cause(f),
		}
	}
	return &payrecon.ConfigError{StatusCode: f.status,
		Cause: fmt.Sprintf("Stripe rejected the request: %v; check STRIPE_API_BASE and the request", g.cause(f))}
}

// permissionPattern finds the permission Stripe names in a restricted key's
// 403: "… Having the 'rak_charge_read' permission would allow this request
// to continue."
var permissionPattern = regexp.MustCompile(`'(rak_[a-z0-9_]+)'`)

// dashboardPermissions maps Stripe's permission names to the Dashboard's
// wording, where an operator grants them to a restricted key.
var dashboardPermissions = map[string]string{
	"rak_payment_intent_read":   "PaymentIntents: Read",
	"rak_charge_read":           "Charges: Read",
	"rak_dispute_read":          "Disputes: Read",
	"rak_event_read":            "Events: Read",
	"rak_payout_read":           "Payouts: Read",
	"rak_balance_read":          "Balance: Read",
	"rak_checkout_session_read": "Checkout Sessions: Read",
}

// forbiddenCause says which permission a restricted key lacks: the one
// Stripe names in its message (the status is what classifies the error; the
// message only adds which permission), else those operation op needs.
func (g *Gateway) forbiddenCause(op string, f *failure) string {
	const fix = "; grant it to the key in the Stripe Dashboard (Developers > API keys) or set another key in STRIPE_SECRET_KEY"
	if f.stripeErr != nil {
		if m := permissionPattern.FindStringSubmatch(f.stripeErr.Msg); m != nil {
			if name, ok := dashboardPermissions[m[1]]; ok {
				return fmt.Sprintf("the restricted API key lacks the %s permission (Stripe: %s)%s", name, m[1], fix)
			}
			return fmt.Sprintf("the restricted API key lacks the permission Stripe calls %s%s", m[1], fix)
		}
	}
	needs := "PaymentIntents: Read and Charges: Read (the latest charge is read with each PaymentIntent)"
	switch op {
	case opEvents:
		needs = "Events: Read"
	case opPayouts:
		needs = "Payouts: Read"
	case opPayoutLines:
		needs = "Balance: Read (and Payouts: Read)"
	}
	return fmt.Sprintf("Stripe refused the API key access (403); a restricted key needs %s%s", needs, fix)
}

// cause is the failure as an error whose text is ours: Stripe's message with
// anything that looks like an API key removed, never the raw SDK error.
func (g *Gateway) cause(f *failure) error {
	switch {
	case f.timedOut:
		return &causeError{text: fmt.Sprintf("no answer within %s", g.cfg.Timeout)}
	case f.stripeErr != nil:
		e := f.stripeErr
		text := string(e.Type)
		if e.Code != "" {
			text += "/" + string(e.Code)
		}
		text += ": " + g.redact(e.Msg)
		if id := f.requestID(); id != "" {
			text += " (request " + id + ")"
		}
		return &causeError{text: text, err: e}
	case f.status != 0:
		ct := f.header.Get("Content-Type")
		text := fmt.Sprintf("unreadable answer (Content-Type %q): %s", ct, g.redact(f.err.Error()))
		if f.status >= 400 {
			text = fmt.Sprintf("error answer without a Stripe error body (Content-Type %q)", ct)
		}
		if id := f.requestID(); id != "" {
			text += " (request " + id + ")"
		}
		return &causeError{text: text}
	}
	if errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded) {
		// Never let an unavailable error match the caller's context errors.
		return &causeError{text: g.redact(f.err.Error())}
	}
	return &causeError{text: g.redact(f.err.Error()), err: f.err}
}

// causeError carries text of ours over an underlying error.
type causeError struct {
	text string
	err  error
}

func (e *causeError) Error() string { return e.text }
func (e *causeError) Unwrap() error { return e.err }

// keyPattern matches Stripe API keys, masked ones included.
var keyPattern = regexp.MustCompile(`(?:sk|rk|pk)_(?:test|live)_[0-9A-Za-z*]+`)

// redact removes the secret key, and anything shaped like a Stripe key, from
// text that came from outside.
func (g *Gateway) redact(text string) string {
	text = strings.ReplaceAll(text, g.cfg.SecretKey, "[redacted]")
	return keyPattern.ReplaceAllString(text, "[redacted key]")
}

// retryAfter reads Retry-After (seconds or an HTTP date), capped at
// MaxRetryAfter; zero when absent.
func (g *Gateway) retryAfter(h http.Header) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	limit := g.cfg.MaxRetryAfter
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs > int64(limit/time.Second) {
			return limit
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(g.cfg.Clock.Now())
	}
	return min(max(d, 0), limit)
}

// Outcomes, the "outcome" label of payrecon_stripe_requests_total.
const (
	OutcomeOK          = "ok"
	OutcomeNotFound    = "not_found"
	OutcomeRateLimited = "rate_limited"
	OutcomeUnavailable = "unavailable"
	OutcomeConfigError = "config_error"
	OutcomeCanceled    = "canceled"
)

func outcome(err error) string {
	var u *payrecon.UnavailableError
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return OutcomeCanceled
	case errors.Is(err, payrecon.ErrNotFound):
		return OutcomeNotFound
	case errors.Is(err, payrecon.ErrConfig):
		return OutcomeConfigError
	case errors.As(err, &u) && u.RateLimited:
		return OutcomeRateLimited
	}
	return OutcomeUnavailable
}
