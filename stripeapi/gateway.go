package stripeapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/form"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
)

// Gateway reads PaymentIntents, with their latest charge, and events from
// Stripe. It implements payrecon.Gateway and payrecon.EventSource and is
// safe for concurrent use.
type Gateway struct {
	cfg Config
	sc  *stripe.Client
	// raw is the same backend as sc's, asked through stripe-go's raw
	// request API: the PaymentIntent reads decode their answers themselves
	// (decode.go).
	raw     stripe.RawRequestBackend
	metrics *metrics
	// account, when set, is the connected account every request is made
	// on behalf of (ForAccount).
	account string
}

var (
	_ payrecon.Gateway     = (*Gateway)(nil)
	_ payrecon.EventSource = (*Gateway)(nil)
)

// The expansions that bring the latest charge in the same request as its
// PaymentIntent: reading the money costs no extra request.
const (
	expandChargeRetrieve = "latest_charge"
	expandChargeList     = "data.latest_charge"
)

// New returns a Gateway. A missing SecretKey or a malformed APIBase is a
// *payrecon.ConfigError.
func New(cfg Config) (*Gateway, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(cfg.APIBase),
		HTTPClient:        recordingClient(cfg.HTTPClient),
		MaxNetworkRetries: stripe.Int64(0),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
		EnableTelemetry:   stripe.Bool(false),
	})
	raw, ok := backends.API.(stripe.RawRequestBackend)
	if !ok {
		return nil, fmt.Errorf("stripe-go's API backend %T has no raw request API", backends.API)
	}
	return &Gateway{cfg: cfg, sc: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends)), raw: raw,
		metrics: newMetrics(cfg.Registerer)}, nil
}

// ForAccount returns a gateway on the same client whose every request
// carries Stripe-Account: account (a connected account's direct charges and
// events are visible only so); "" is the platform's own. The header is set
// by the transport on every request the gateway makes, whatever the
// endpoint, so no call can forget it; a request of one account's gateway
// never carries another's. onRateLimited, when set, replaces
// Config.RateLimitedFunc: a 429 slows that account's budget only.
func (g *Gateway) ForAccount(account string, onRateLimited func(retryAfter time.Duration)) *Gateway {
	c := *g
	c.account = account
	if onRateLimited != nil {
		c.cfg.RateLimitedFunc = onRateLimited
	}
	return &c
}

// Account returns the connected account the gateway reads as ("" for the
// platform).
func (g *Gateway) Account() string { return g.account }

// retrieveQuery is the query of a retrieve: exactly what stripe-go's
// PaymentIntentRetrieveParams with the expansion encodes to.
var retrieveQuery = func() string {
	params := &stripe.PaymentIntentRetrieveParams{}
	params.AddExpand(expandChargeRetrieve)
	values := &form.Values{}
	form.AppendTo(values, params)
	return values.Encode()
}()

// RetrieveIntent reads one PaymentIntent with its latest charge expanded
// (GET /v1/payment_intents/{id}?expand[]=latest_charge), in one request.
// An empty id is reported as not found.
func (g *Gateway) RetrieveIntent(ctx context.Context, id string) (payrecon.Intent, error) {
	if id == "" {
		return payrecon.Intent{}, fmt.Errorf("retrieve payment intent: empty id: %w", payrecon.ErrNotFound)
	}
	path := stripe.FormatURLPath("/v1/payment_intents/%s", id) + "?" + retrieveQuery
	in, err := getDecoded(ctx, g, opRetrieve, path, decodeIntent)
	if err != nil {
		return payrecon.Intent{}, fmt.Errorf("retrieve payment intent %q: %w", id, err)
	}
	return in, nil
}

// ListIntents reads exactly one page of PaymentIntents with their latest
// charges expanded (GET /v1/payment_intents?expand[]=data.latest_charge),
// newest first, filtered by created ≥ q.CreatedGTE and ≤ q.CreatedLTE (each
// truncated to whole seconds; zero means unbounded), continuing after
// q.StartingAfter. A Limit outside 1..100 means 100. The caller pages on with
// StartingAfter = the last intent's ID while HasMore.
func (g *Gateway) ListIntents(ctx context.Context, q payrecon.ListQuery) (payrecon.IntentPage, error) {
	return g.listIntents(ctx, q, true)
}

// listIntents is ListIntents, with or without the charge expansion.
func (g *Gateway) listIntents(ctx context.Context, q payrecon.ListQuery, expandCharge bool) (payrecon.IntentPage, error) {
	path := "/v1/payment_intents?" + listQuery(q, expandCharge)
	page, err := getDecoded(ctx, g, opList, path, decodeIntentPage)
	if err != nil {
		return payrecon.IntentPage{}, fmt.Errorf("list payment intents (after %q): %w", q.StartingAfter, err)
	}
	return page, nil
}

// listQuery encodes a list's parameters as stripe-go's typed list does.
func listQuery(q payrecon.ListQuery, expandCharge bool) string {
	values := &form.Values{}
	form.AppendTo(values, listParams(q, expandCharge))
	return values.Encode()
}

// listParams are a list's parameters in stripe-go's types.
func listParams(q payrecon.ListQuery, expandCharge bool) *stripe.PaymentIntentListParams {
	params := &stripe.PaymentIntentListParams{}
	params.Limit = stripe.Int64(pageLimit(q.Limit))
	if expandCharge {
		params.AddExpand(expandChargeList)
	}
	if q.StartingAfter != "" {
		params.StartingAfter = stripe.String(q.StartingAfter)
	}
	if !q.CreatedGTE.IsZero() || !q.CreatedLTE.IsZero() {
		params.CreatedRange = &stripe.RangeQueryParams{}
		if !q.CreatedGTE.IsZero() {
			params.CreatedRange.GreaterThanOrEqual = q.CreatedGTE.Unix()
		}
		if !q.CreatedLTE.IsZero() {
			params.CreatedRange.LesserThanOrEqual = q.CreatedLTE.Unix()
		}
	}
	return params
}

// get makes one GET through stripe-go's raw request API and returns the
// answer's body. Failures are stripe-go's own (a *stripe.Error for an
// answer of 400 or more), so retries and translation treat them as for
// any typed call.
func (g *Gateway) get(ctx context.Context, path string) ([]byte, error) {
	resp, err := g.raw.RawRequest(http.MethodGet, path, g.cfg.SecretKey, "", &stripe.RawParams{Params: stripe.Params{Context: ctx}})
	if err != nil {
		return nil, err
	}
	return resp.RawJSON, nil
}

// pageLimit is a list's page size: a limit outside 1..100 means 100.
func pageLimit(limit int) int64 {
	if limit < 1 || limit > 100 {
		return 100
	}
	return int64(limit)
}

// getDecoded is one GET of path (a raw request, with the gateway's retries,
// budget and error translation, reported as op) whose body decode turns into
// the value: the retrieves and lists of intents and of Checkout Sessions.
func getDecoded[T any](ctx context.Context, g *Gateway, op, path string, decode func([]byte) (T, error)) (T, error) {
	var v T
	err := g.do(ctx, op, func(ctx context.Context) error {
		body, err := g.get(ctx, path)
		if err != nil {
			return err
		}
		v, err = decode(body)
		return err
	})
	return v, err
}

// do runs call with retries, translates its failure and reports the outcome
// to the metrics.
func (g *Gateway) do(ctx context.Context, op string, call func(context.Context) error) error {
	start := g.cfg.Clock.Now()
	err := g.retry(ctx, op, call)
	g.metrics.observe(op, outcome(err), g.cfg.Clock.Now().Sub(start))
	return err
}

func (g *Gateway) retry(ctx context.Context, op string, call func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		f := g.attempt(ctx, call)
		if f == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err // the caller gave up: its error, not "unavailable"
		}
		if attempt >= g.cfg.MaxRetries || !f.retryable() {
			return g.translate(op, f)
		}
		if f.status == http.StatusTooManyRequests && g.cfg.RateLimitedFunc != nil {
			g.cfg.RateLimitedFunc(g.retryAfter(f.header))
		}
		wait := g.backoff(attempt, g.retryAfter(f.header))
		if dl, ok := ctx.Deadline(); ok && g.cfg.Clock.Now().Add(wait).After(dl) {
			return g.translate(op, f) // the caller's deadline would pass while waiting
		}
		g.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "stripe request failed; retrying",
			slog.String("op", op),
			slog.Int("attempt", attempt+1),
			slog.Int("status", f.status),
			slog.String("request_id", f.requestID()),
			slog.Duration("wait", wait),
			slog.String("error", g.cause(f).Error()))
		if err := g.cfg.SleepFunc(ctx, wait); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			return fmt.Errorf("wait before retry: %w", err)
		}
		// A retry is a request at Stripe's side: it spends the caller's
		// budget like the first attempt did.
		if lim := budget.ForRetries(ctx); lim != nil {
			if err := lim.Wait(ctx); err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return ctxErr
				}
				return fmt.Errorf("wait for the budget before retry: %w", err)
			}
		}
	}
}

// attempt makes one request under the per-attempt timeout and describes its
// failure, or returns nil.
func (g *Gateway) attempt(ctx context.Context, call func(context.Context) error) *failure {
	ans := &answer{account: g.account}
	actx, cancel := context.WithTimeout(context.WithValue(ctx, answerKey{}, ans), g.cfg.Timeout)
	defer cancel()
	err := call(actx)
	if err == nil {
		return nil
	}
	f := newFailure(err, ans)
	if actx.Err() != nil && ctx.Err() == nil {
		f.timedOut = true
	}
	return f
}

// backoff is BackoffBase·2^attempt capped at BackoffMax, jittered down by up
// to half, and never shorter than Stripe's Retry-After.
func (g *Gateway) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := g.cfg.BackoffMax
	if attempt < 32 {
		if b := g.cfg.BackoffBase << attempt; b > 0 && b < d {
			d = b
		}
	}
	d -= time.Duration(g.cfg.JitterFunc() * float64(d/2))
	return max(d, retryAfter)
}

// answerKey carries an *answer in an attempt's context.
type answerKey struct{}

// answer is the last HTTP answer of an attempt, recorded by the transport:
// stripe-go drops the status and headers of answers whose body is not JSON.
// account is what the transport sets as the request's Stripe-Account.
type answer struct {
	status  int
	header  http.Header
	account string
}

// recordingTransport records each answer into the *answer of the request's
// context, if any.
type recordingTransport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper. A request of an account's
// gateway gets its Stripe-Account header here (and only its own: the header
// is replaced, never added to). A GET that stripe-go gave an empty body (it
// always sets one) goes without: net/http would otherwise start a goroutine
// and a timer per request to find out that the body is empty before it
// writes the request.
func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	a, ok := req.Context().Value(answerKey{}).(*answer)
	if ok && a.account != "" {
		req = req.Clone(req.Context())
		req.Header.Set("Stripe-Account", a.account)
	}
	if req.Method == http.MethodGet && req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody {
		bare := *req
		bare.Body, bare.GetBody = nil, nil
		req = &bare
	}
	resp, err := t.base.RoundTrip(req)
	if ok && resp != nil {
		a.status, a.header = resp.StatusCode, resp.Header
	}
	return resp, err
}

// recordingClient returns a copy of c (or a new client) whose transport
// records answers.
func recordingClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	base := out.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64
		base = t
	}
	out.Transport = &recordingTransport{base: base}
	return &out
}
