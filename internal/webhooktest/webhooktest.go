// Package webhooktest is the harness of the webhook's tests, shared by
// httpapi's (the handler alone) and postgres's (the handler into the
// database): a real listener for a handler, Stripe events about a
// PaymentIntent, and deliveries signed as Stripe signs them.
package webhooktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

// The signing secrets of the tests: the current one and, during a
// rotation, the previous one.
const (
	Secret    = "whsec_test_current"
	OldSecret = "whsec_test_previous"
)

// Server is a handler on a real loopback listener, with a client of the
// test's own (closed with the test).
type Server struct {
	URL    string
	Client *http.Client
}

// Serve starts h on a real listener for the rest of the test.
func Serve(t testing.TB, h http.Handler) *Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	return &Server{URL: srv.URL, Client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Post delivers payload to /webhooks/stripe with the given
// Stripe-Signature header ("" for none) and returns the status and body.
func (s *Server) Post(t testing.TB, payload []byte, sig string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/webhooks/stripe", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	if sig != "" {
		req.Header.Set("Stripe-Signature", sig)
	}
	return s.Do(t, req)
}

// Deliver signs payload with Secret at now and posts it.
func (s *Server) Deliver(t testing.TB, payload []byte, now time.Time) (int, []byte) {
	t.Helper()
	return s.Post(t, payload, stripesim.SignatureHeader(payload, Secret, now))
}

// Do sends req with the server's client and reads the whole answer.
func (s *Server) Do(t testing.TB, req *http.Request) (int, []byte) {
	t.Helper()
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// Event renders a Stripe event about a PaymentIntent, with an API version
// older than stripe-go's (any version must be accepted).
func Event(id, typ, intentID string, status payrecon.StripeStatus, created time.Time) []byte {
	b, err := json.Marshal(map[string]any{
		"id":               id,
		"object":           "event",
		"api_version":      "2019-02-19",
		"created":          created.Unix(),
		"livemode":         false,
		"pending_webhooks": 1,
		"request":          map[string]any{"id": nil, "idempotency_key": nil},
		"type":             typ,
		"data": map[string]any{"object": map[string]any{
			"id": intentID, "object": "payment_intent", "status": string(status),
			"amount": 1000, "currency": "usd", "metadata": map[string]string{"order": "o1"},
		}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// IntentID is the n-th PaymentIntent id of a test.
func IntentID(n int) string { return fmt.Sprintf("pi_test_%04d", n) }

// JSON decodes a JSON answer.
func JSON(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return m
}
