package payrecon

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TransitionSource is the road a transition came by: the source column of
// payment_transitions and of a notification.
type TransitionSource string

// Transition sources.
const (
	// SourceWebhook: a Stripe webhook (POST /webhooks/stripe); the source
	// ref is the event id.
	SourceWebhook TransitionSource = "webhook"
	// SourceEvents: the events catch-up (GET /v1/events); the source ref is
	// the event id.
	SourceEvents TransitionSource = "events"
	// SourceRepair: a repair command from the outbox; the source ref is the
	// outbox id.
	SourceRepair TransitionSource = "repair"
	// SourceManual: anything else that calls the writer directly (an
	// operator, an embedding application); the source ref names who.
	SourceManual TransitionSource = "manual"
)

// TransitionSources lists every transition source.
var TransitionSources = []TransitionSource{SourceWebhook, SourceEvents, SourceRepair, SourceManual}

// Valid reports whether s is one of TransitionSources.
func (s TransitionSource) Valid() bool { return slices.Contains(TransitionSources, s) }

// Origin says where a command came from: recorded on the transition it
// makes.
type Origin struct {
	Source TransitionSource
	// Ref is the Stripe event id, the outbox id, or the operator.
	Ref string
}

// PaymentTransition is one real transition of a payment: a row of
// payment_transitions, the audit trail. (Transition is the row of the
// transition table a command follows.)
type PaymentTransition struct {
	ID         int64            `json:"id"`
	PaymentID  int64            `json:"payment_id"`
	From       LocalStatus      `json:"from"`
	To         LocalStatus      `json:"to"`
	Version    int64            `json:"version"`
	Source     TransitionSource `json:"source"`
	SourceRef  string           `json:"source_ref"`
	OccurredAt time.Time        `json:"occurred_at"`
}

// NotificationType is the type of every transition notification.
const NotificationType = "payment.transitioned"

// Notification is the JSON body POSTed to the application for each
// transition (design.md, "Transitions and notifications"). ID is the
// transition's id: the same in the Idempotency-Key header, and the key a
// receiver dedupes by.
type Notification struct {
	ID                    int64            `json:"id"`
	Type                  string           `json:"type"`
	PaymentID             int64            `json:"payment_id"`
	OrderID               string           `json:"order_id"`
	StripePaymentIntentID string           `json:"stripe_payment_intent_id"`
	From                  LocalStatus      `json:"from"`
	To                    LocalStatus      `json:"to"`
	Version               int64            `json:"version"`
	Source                TransitionSource `json:"source"`
	SourceRef             string           `json:"source_ref"`
	OccurredAt            time.Time        `json:"occurred_at"`
}

// Headers of a notification.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>".
	SignatureHeader = "Payrecon-Signature"
	// IdempotencyKeyHeader carries the notification's id.
	IdempotencyKeyHeader = "Idempotency-Key"
)

// Errors of VerifyNotification, for errors.Is.
var (
	// ErrSignatureHeader: the header is missing or malformed.
	ErrSignatureHeader = errors.New("malformed Payrecon-Signature header")
	// ErrSignatureMismatch: no v1 signature matches the payload and secret.
	ErrSignatureMismatch = errors.New("notification signature does not match")
	// ErrSignatureExpired: the timestamp is further from now than the
	// tolerance (a replay, or a clock far off).
	ErrSignatureExpired = errors.New("notification signature timestamp outside the tolerance")
)

// SignNotification returns the Payrecon-Signature header value for payload
// signed with secret at time t: "t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<payload>">".
func SignNotification(payload []byte, secret string, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(notificationMAC(payload, secret, ts))
}

func notificationMAC(payload []byte, secret, ts string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(payload)
	return m.Sum(nil)
}

// VerifyNotification checks a notification as a receiver got it: payload
// is the raw request body, header the Payrecon-Signature header, secret the
// shared --notify-secret. It accepts the notification when one of the
// header's v1 signatures is the HMAC-SHA256 of "<t>.<payload>" and t is
// within tolerance of now (tolerance ≤ 0 skips the time check; five minutes
// is a good value). Compare in constant time; parse the JSON only after
// this returns nil.
func VerifyNotification(payload []byte, header string, secret string, tolerance time.Duration) error {
	return verifyNotificationAt(payload, header, secret, tolerance, time.Now())
}

func verifyNotificationAt(payload []byte, header, secret string, tolerance time.Duration, now time.Time) error {
	if secret == "" {
		return errors.New("verify notification: empty secret")
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return fmt.Errorf("verify notification: %w", ErrSignatureHeader)
	}
	want := notificationMAC(payload, secret, ts)
	matched := false
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("verify notification: %w", ErrSignatureMismatch)
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("verify notification: signed %s ago: %w", d.Round(time.Second), ErrSignatureExpired)
		}
	}
	return nil
}
