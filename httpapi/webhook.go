package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/payrecon/payrecon"
)

// handleStripeWebhook serves POST /webhooks/stripe.
func handleStripeWebhook(d Deps) http.Handler {
	log := d.Logger.With(slog.String("handler", "stripe_webhook"))
	cfgErr := d.Validate() // withDefaults dropped empty secrets
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if cfgErr != nil {
			log.Error("webhook endpoint is not configured", slog.String("error", cfgErr.Error()))
			writeError(w, http.StatusInternalServerError, "webhook endpoint is not configured")
			return
		}
		payload, status, err := readBody(w, r, d.Webhook.MaxBodyBytes)
		if err != nil {
			log.Warn("webhook rejected", slog.Int("status", status), slog.String("reason", err.Error()),
				slog.String("remote_addr", r.RemoteAddr))
			writeError(w, status, err.Error())
			return
		}
		ev, err := verifyEvent(payload, r.Header.Get("Stripe-Signature"), d.Webhook, d.Clock.Now())
		if err != nil {
			// The reason quotes at most a few dozen characters of what was
			// sent: never a whole payload.
			log.Warn("webhook rejected", slog.Int("status", http.StatusBadRequest), slog.String("reason", err.Error()),
				slog.String("remote_addr", r.RemoteAddr), slog.Int("body_bytes", len(payload)))
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		attrs := []any{slog.String("event_id", ev.ID), slog.String("event_type", ev.Type)}
		if ev.IntentID() != "" {
			attrs = append(attrs, slog.String("payment_intent_id", ev.IntentID()))
		}
		res, err := d.Events.ProcessEvent(r.Context(), ev)
		if err != nil {
			level := slog.LevelError
			if r.Context().Err() != nil {
				level = slog.LevelWarn // the client went away mid-request: Stripe retries, nothing is wrong here
			}
			log.Log(r.Context(), level, "webhook event not recorded; Stripe will retry", append(attrs, slog.String("error", err.Error()))...)
			writeError(w, http.StatusServiceUnavailable, "could not record the event; retry later")
			return
		}
		attrs = append(attrs, slog.String("outcome", res.Outcome), slog.Bool("duplicate", res.Duplicate),
			slog.Duration("duration", time.Since(start)))
		if res.PaymentID != 0 {
			attrs = append(attrs, slog.Int64("payment_id", res.PaymentID))
		}
		if res.FindingID != 0 {
			attrs = append(attrs, slog.Int64("finding_id", res.FindingID))
		}
		log.Info("webhook event processed", attrs...)
		writeJSON(w, http.StatusOK, res)
	})
}

// readBody reads at most limit bytes of the body; a longer body is 413.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, error) {
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the limit of %d", r.ContentLength, limit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body exceeds the limit of %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
	}
	return b, http.StatusOK, nil
}

// verifyEvent checks the signature and its timestamp, then parses the event
// with payrecon.ParseEvent. Every error is the client's fault (400) and says
// what is wrong.
func verifyEvent(payload []byte, header string, cfg WebhookConfig, now time.Time) (payrecon.Event, error) {
	var ev payrecon.Event
	if header == "" {
		return ev, errors.New("missing Stripe-Signature header")
	}
	signed := false
	for _, secret := range cfg.Secrets {
		err := webhook.ValidatePayloadIgnoringTolerance(payload, header, secret)
		if err == nil {
			signed = true
			break
		}
		if !errors.Is(err, webhook.ErrNoValidSignature) {
			return ev, fmt.Errorf("malformed Stripe-Signature header: %w", err)
		}
	}
	if !signed {
		return ev, errors.New("no valid signature: the payload was not signed with any configured secret")
	}
	// The HMAC covers the timestamp, so it is trusted from here on.
	at, err := signatureTime(header)
	if err != nil {
		return ev, err
	}
	if skew := now.Sub(at); skew > cfg.Tolerance || skew < -cfg.Tolerance {
		return ev, fmt.Errorf("signature timestamp %s is outside the tolerance of %s (now %s)",
			at.UTC().Format(time.RFC3339), cfg.Tolerance, now.UTC().Format(time.RFC3339))
	}
	return payrecon.ParseEvent(payload)
}

// signatureTime returns the "t=" of a Stripe-Signature header. stripe-go
// signs with the last "t=" of the header; one that carries several is
// refused, so the time checked here is the one that was verified.
func signatureTime(header string) (time.Time, error) {
	var (
		ts string
		n  int
	)
	for _, part := range strings.Split(header, ",") {
		if k, v, ok := strings.Cut(part, "="); ok && k == "t" {
			ts, n = v, n+1
		}
	}
	if n != 1 {
		return time.Time{}, fmt.Errorf("malformed Stripe-Signature header: %d timestamps", n)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, errors.New("malformed Stripe-Signature header: bad timestamp")
	}
	return time.Unix(sec, 0), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
