package stripeapi

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/payrecon/payrecon/internal/redact"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// Defaults for the zero fields of Config.
const (
	TimeoutDefault       = 10 * time.Second
	MaxRetriesDefault    = 2
	BackoffBaseDefault   = 500 * time.Millisecond
	BackoffMaxDefault    = 5 * time.Second
	MaxRetryAfterDefault = 30 * time.Second
)

// APIBaseDefault is Stripe's API base URL, used when Config.APIBase is
// empty.
const APIBaseDefault = stripe.APIURL

// Config configures a Gateway. Only SecretKey is required.
type Config struct {
	// SecretKey is the Stripe secret or restricted key (STRIPE_SECRET_KEY).
	SecretKey string
	// APIBase overrides Stripe's base URL (STRIPE_API_BASE), e.g. a
	// stripe-mock or stripesim URL; empty means https://api.stripe.com. It
	// must be scheme://host[:port]: stripe-go v85 fails every request to a
	// base URL with a path.
	APIBase string
	// HTTPClient sends the requests; nil means a client of the gateway's
	// own. The gateway wraps its Transport to read status codes and headers
	// of answers stripe-go cannot parse.
	HTTPClient *http.Client
	// Timeout bounds each attempt; 0 means TimeoutDefault.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt; 0 means
	// MaxRetriesDefault, a negative value means none. Each retry waits,
	// after its backoff, on the budget the call's context carries
	// (budget.WithRetries): a retry is a request at Stripe's side too.
	MaxRetries int
	// BackoffBase is the wait before the first retry, doubled for each
	// further one up to BackoffMax, then jittered down by up to half;
	// 0 means BackoffBaseDefault.
	BackoffBase time.Duration
	// BackoffMax caps the backoff; 0 means BackoffMaxDefault.
	BackoffMax time.Duration
	// MaxRetryAfter caps Stripe's Retry-After, both as a wait and as
	// reported in UnavailableError.RetryAfter; 0 means MaxRetryAfterDefault.
	MaxRetryAfter time.Duration
	// SleepFunc waits d between attempts and returns ctx.Err() at once when
	// ctx is done; nil means a timer. Tests inject one that returns at once.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// RateLimitedFunc, when set, is told about every 429 the gateway
	// retries after, with Stripe's Retry-After hint (zero when absent), so a
	// shared rate limiter slows down even when the retry succeeds. A 429
	// that is returned is reported only through the error.
	RateLimitedFunc func(retryAfter time.Duration)
	// JitterFunc returns a number in [0, 1) for backoff jitter; nil means a
	// source of the gateway's own, seeded from crypto/rand.
	JitterFunc func() float64
	// Clock times calls and reads Retry-After dates; nil means
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives retry warnings; nil discards them.
	Logger *slog.Logger
	// Registerer receives the gateway's metrics (nil: not registered):
	// payrecon_stripe_requests_total{op,outcome} and
	// payrecon_stripe_request_duration_seconds{op}, once per RetrieveIntent,
	// ListIntents or ListEvents (and per request of CheckAccess) with op
	// "retrieve", "list" or "events" (ListPayouts and RetrievePayout:
	// "payouts"; ListPayoutLines: "balance_transactions"), the outcome ("ok", "not_found",
	// "rate_limited", "unavailable", "config_error" or "canceled") and the
	// time the call took, retries included.
	Registerer prometheus.Registerer
}

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.SecretKey == "" {
		return c, &payrecon.ConfigError{Cause: "STRIPE_SECRET_KEY is not set: give payrecon a Stripe secret key or a restricted key with read access to PaymentIntents"}
	}
	if c.APIBase == "" {
		c.APIBase = APIBaseDefault
	}
	// stripe-go v85 reads the API version from the request path, so a base
	// URL with a path ("http://proxy/stripe") fails every request.
	u, err := url.Parse(c.APIBase)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/" && u.Path != "/v1" && u.Path != "/v1/") || u.RawQuery != "" {
		return c, &payrecon.ConfigError{Cause: fmt.Sprintf("STRIPE_API_BASE %q must be scheme://host[:port], http or https, with no path, query or credentials", redact.URL(c.APIBase))}
	}
	if c.Timeout <= 0 {
		c.Timeout = TimeoutDefault
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = MaxRetriesDefault
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = BackoffBaseDefault
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = BackoffMaxDefault
	}
	if c.MaxRetryAfter <= 0 {
		c.MaxRetryAfter = MaxRetryAfterDefault
	}
	if c.SleepFunc == nil {
		c.SleepFunc = payrecon.Sleep
	}
	if c.JitterFunc == nil {
		c.JitterFunc = newJitter()
	}
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// newJitter returns a goroutine-safe jitter source of its own, seeded from
// crypto/rand (no global random state).
func newJitter() func() float64 {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // never fails on supported platforms
	r := mrand.New(mrand.NewChaCha8(seed))
	var mu sync.Mutex
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}
