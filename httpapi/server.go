// Package httpapi is payrecon's HTTP surface, on two listeners: the public
// one (NewServer: the Stripe webhook endpoint, health and readiness) and the
// admin one (NewAdminServer: health, readiness, metrics, the operator
// console and the repair queue's dashboard), which only operators reach.
//
// routes.go is the one map of both; each handler is a handleX(deps)
// closure. Nothing is global: no DefaultServeMux, no package-level state.
//
// # The webhook
//
// POST /webhooks/stripe (present when a signing secret is configured)
// verifies the Stripe-Signature header with stripe-go's webhook package
// against each configured secret (several during a rotation), then checks
// the signed timestamp against the injected clock: stripe-go compares it
// with time.Now, which a test cannot move, so the signature is checked with
// webhook.ValidatePayloadIgnoringTolerance and the 5-minute window (either
// side of now) is checked here. Only the stable fields of the
// event are read (id, object, type, created, api_version, data.object.id,
// data.object.object, data.object.status), so events of any API version are
// accepted.
//
// The event is then parsed and its shape checked by payrecon.ParseEvent
// (the same parser the events catch-up uses), and handed to the
// payrecon.EventProcessor (postgres.Events), which records it once by event
// id and applies it through the canonical writer in one transaction. A
// redelivery is answered 2xx with the first delivery's outcome.
//
// Answers: 200 for processed, duplicate and ignored events; 400 for a
// missing or bad signature, a stale timestamp and a malformed event (nothing
// is written); 413 for a body over the cap; 503 when the event could not be
// recorded (the database fails), so Stripe retries. The package imports no
// database driver: its handler tests need no database. Logs carry the event id, type and PaymentIntent id, never
// payloads or secrets.
package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/payrecon/payrecon"
)

// Defaults of WebhookConfig.
const (
	// ToleranceDefault is how far the signed timestamp of a delivery may be
	// from now, Stripe's recommended window.
	ToleranceDefault = 5 * time.Minute
	// MaxBodyBytesDefault caps a webhook body. Stripe's events are a few
	// kilobytes; a PaymentIntent with many charges and metadata stays well
	// under this.
	MaxBodyBytesDefault int64 = 512 << 10
)

// WebhookConfig configures POST /webhooks/stripe.
type WebhookConfig struct {
	// Secrets are the endpoint's signing secrets ("whsec_…"). A delivery
	// signed with any of them is accepted, so a secret can be rotated
	// without losing events: add the new one, then remove the old. With
	// none, the server has no webhook route.
	Secrets []string
	// Tolerance is how far the signed timestamp may be from the clock's
	// now, either way. Default ToleranceDefault.
	Tolerance time.Duration
	// MaxBodyBytes caps the request body; a larger one is answered 413.
	// Default MaxBodyBytesDefault.
	MaxBodyBytes int64
}

// Deps are the server's dependencies. The webhook route exists only when
// Webhook.Secrets has a secret, and then needs Events (see Validate); the
// optional handlers add their routes when set.
type Deps struct {
	// Logger receives request logs; nil discards them.
	Logger *slog.Logger
	// Clock is the time of the webhook's timestamp check. Default
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Events records and applies verified events (postgres.Events).
	Events payrecon.EventProcessor
	// Webhook configures the Stripe webhook endpoint.
	Webhook WebhookConfig
	// Metrics, when set, serves GET /metrics (admin listener).
	Metrics http.Handler
	// Ready, when set, serves GET /readyz.
	Ready http.Handler
	// Queue, when set, serves the repair queue's dashboard (riverui) under
	// QueuePrefix (admin listener). It must do its own authentication
	// (console.Console.Protect).
	Queue       http.Handler
	QueuePrefix string
	// Console, when set, serves the operator console under ConsolePrefix
	// (admin listener).
	Console http.Handler
}

// ConsolePrefix is where the admin listener mounts the console.
const ConsolePrefix = "/console/"

// Validate reports dependencies the webhook needs and lacks, and an empty
// secret in the list (a stray comma in STRIPE_WEBHOOK_SECRET). No secret at
// all is valid: the server then has no webhook route.
func (d Deps) Validate() error {
	var errs []error
	for _, s := range d.Webhook.Secrets {
		if s == "" {
			errs = append(errs, errors.New("httpapi: an empty webhook signing secret"))
			break
		}
	}
	if len(d.Webhook.Secrets) > 0 && d.Events == nil {
		errs = append(errs, errors.New("httpapi: the webhook has no event processor"))
	}
	if d.Webhook.Tolerance < 0 || d.Webhook.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("httpapi: negative webhook tolerance or body cap"))
	}
	return errors.Join(errs...)
}

func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = payrecon.SystemClock{}
	}
	if d.Webhook.Tolerance == 0 {
		d.Webhook.Tolerance = ToleranceDefault
	}
	if d.Webhook.MaxBodyBytes == 0 {
		d.Webhook.MaxBodyBytes = MaxBodyBytesDefault
	}
	// A copy the caller cannot change under us, without empty secrets.
	secrets := make([]string, 0, len(d.Webhook.Secrets))
	for _, s := range d.Webhook.Secrets {
		if s != "" {
			secrets = append(secrets, s)
		}
	}
	d.Webhook.Secrets = secrets
	return d
}

// NewServer returns the handler of the public listener: POST
// /webhooks/stripe, GET /healthz and GET /readyz, nothing else (Metrics,
// Queue and Console are ignored: they belong to NewAdminServer). Call
// deps.Validate first: a webhook without its database or writer answers
// 500, loudly, rather than accepting events it cannot record.
func NewServer(deps Deps) http.Handler {
	deps = deps.withDefaults()
	mux := http.NewServeMux()
	addRoutes(mux, deps)
	return mux
}

// NewAdminServer returns the handler of the admin listener: GET /healthz,
// GET /readyz, GET /metrics, the console under /console/ and the queue
// dashboard under QueuePrefix. It has no webhook.
func NewAdminServer(deps Deps) http.Handler {
	deps = deps.withDefaults()
	mux := http.NewServeMux()
	addAdminRoutes(mux, deps)
	return mux
}
