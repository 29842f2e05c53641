package stripesim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"
)

// ErrNoWebhook: DeliverPending or RetryFailed was called with no webhook URL
// configured.
var ErrNoWebhook = errors.New("stripesim: no webhook endpoint configured")

// ErrClosed: the simulator is closed.
var ErrClosed = errors.New("stripesim: closed")

// WebhookConfig is the webhook endpoint events are delivered to, and the
// faults of the delivery. Drop, duplicate and reorder decisions come from the
// simulator's seeded source.
type WebhookConfig struct {
	// URL receives each event as a POST.
	URL string
	// Secret is the endpoint's signing secret ("whsec_…").
	Secret string
	// ConnectSecret, when set, signs the events of connected accounts
	// instead: Stripe delivers those to a Connect endpoint, which has a
	// secret of its own (payrecon takes both, comma-separated, in
	// STRIPE_WEBHOOK_SECRET).
	ConnectSecret string
	// DropRate is the probability, 0..1, that a delivery is lost: never
	// sent, and counted as a failed attempt.
	DropRate float64
	// DuplicateRate is the probability, 0..1, that a delivery is sent twice.
	DuplicateRate float64
	// Reorder shuffles each batch of deliveries.
	Reorder bool
	// SignedAt, when not zero, replaces the signature timestamp (the "t=" of
	// Stripe-Signature), to make stale or future signatures. When zero,
	// deliveries are signed at the simulator's clock: with a fake clock, a
	// receiver that checks the timestamp against real time rejects them.
	SignedAt time.Time
}

// SetWebhook replaces the webhook endpoint and its delivery faults.
func (s *Server) SetWebhook(c WebhookConfig) {
	s.hookMu.Lock()
	defer s.hookMu.Unlock()
	s.hook = c
}

// Delivery is one delivery attempt of one event.
type Delivery struct {
	EventID   string
	EventType string
	// Dropped deliveries were never sent.
	Dropped bool
	// Duplicate marks the second send of a duplicated delivery.
	Duplicate bool
	// StatusCode is the endpoint's answer, 0 when there was none.
	StatusCode int
	// Err is the transport error of the send, if any.
	Err error
}

// OK reports whether the endpoint answered 2xx.
func (d Delivery) OK() bool {
	return !d.Dropped && d.Err == nil && d.StatusCode >= 200 && d.StatusCode < 300
}

// SignatureHeader returns the Stripe-Signature header Stripe would send with
// payload signed by secret at t: "t=<unix>,v1=<hex hmac-sha256 of
// "<unix>.<payload>">".
func SignatureHeader(payload []byte, secret string, t time.Time) string {
	return webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
		Payload: payload, Secret: secret, Timestamp: t, Scheme: "v1",
	}).Header
}

// DeliverPending delivers, in one batch, every event no delivery has been
// tried for yet, and returns the attempts in the order they were made.
func (s *Server) DeliverPending(ctx context.Context) ([]Delivery, error) {
	return s.deliver(ctx, func(e *eventRec) bool { return e.attempts == 0 })
}

// RetryFailed delivers again, in one batch, every event whose deliveries
// were tried and all failed, as Stripe's retries do.
func (s *Server) RetryFailed(ctx context.Context) ([]Delivery, error) {
	return s.deliver(ctx, func(e *eventRec) bool { return e.attempts > 0 && !e.delivered })
}

type send struct {
	id, typ   string
	payload   []byte
	dropped   bool
	duplicate bool
	connect   bool // a connected account's event
}

func (s *Server) deliver(ctx context.Context, want func(*eventRec) bool) ([]Delivery, error) {
	select {
	case <-s.closing:
		return nil, ErrClosed
	default:
	}
	s.hookMu.Lock()
	hook := s.hook
	s.hookMu.Unlock()
	if hook.URL == "" {
		return nil, ErrNoWebhook
	}
	plan, err := s.planDeliveries(hook, want)
	if err != nil {
		return nil, err
	}
	signedAt := hook.SignedAt
	if signedAt.IsZero() {
		signedAt = s.clock.Now()
	}
	var out []Delivery
	for _, sd := range plan {
		d := Delivery{EventID: sd.id, EventType: sd.typ, Dropped: sd.dropped, Duplicate: sd.duplicate}
		if !sd.dropped {
			secret := hook.Secret
			if sd.connect && hook.ConnectSecret != "" {
				secret = hook.ConnectSecret
			}
			d.StatusCode, d.Err = s.post(ctx, hook.URL, secret, sd.payload, signedAt)
		}
		if ctx.Err() != nil {
			return out, fmt.Errorf("deliver event %s: %w", sd.id, ctx.Err())
		}
		s.mu.Lock()
		if e, ok := s.events.byID[sd.id]; ok {
			e.attempts++
			e.delivered = e.delivered || d.OK()
		}
		s.mu.Unlock()
		out = append(out, d)
	}
	return out, nil
}

// planDeliveries picks the events, renders their payloads and decides drops,
// duplicates and order.
func (s *Server) planDeliveries(hook WebhookConfig, want func(*eventRec) bool) ([]send, error) {
	s.mu.RLock()
	var plan []send
	for _, e := range s.events.list {
		if !want(e) {
			continue
		}
		j := e.json()
		j.PendingWebhooks = 1
		payload, err := json.Marshal(j)
		if err != nil {
			s.mu.RUnlock()
			return nil, fmt.Errorf("encode event %s: %w", e.id, err)
		}
		plan = append(plan, send{id: e.id, typ: e.typ, payload: payload, connect: e.account != ""})
	}
	s.mu.RUnlock()

	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	if hook.Reorder {
		s.rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	}
	out := make([]send, 0, len(plan))
	for _, sd := range plan {
		sd.dropped = hook.DropRate > 0 && s.rng.Float64() < hook.DropRate
		out = append(out, sd)
		if !sd.dropped && hook.DuplicateRate > 0 && s.rng.Float64() < hook.DuplicateRate {
			sd.duplicate = true
			out = append(out, sd)
		}
	}
	return out, nil
}

// post sends one signed delivery and returns the endpoint's status.
func (s *Server) post(ctx context.Context, url, secret string, payload []byte, signedAt time.Time) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, fmt.Errorf("build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", SignatureHeader(payload, secret, signedAt))
	resp, err := s.hookClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, nil
}
