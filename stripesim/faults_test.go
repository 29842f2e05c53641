package stripesim_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

func TestLatency(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond}})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	start := time.Now()
	if r := b.get(t, "/v1/payment_intents/pi_1"); r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	if d := time.Since(start); d < 40*time.Millisecond {
		t.Fatalf("answered in %s, want at least 40ms", d)
	}
}

func TestInjectedErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	const path = "/v1/payment_intents/pi_1"

	b.sim.SetFaults(stripesim.Faults{ErrorRate: 1, ShouldRetry: "true"})
	r := b.get(t, path)
	if r.status != 500 || r.header.Get("Stripe-Should-Retry") != "true" || r.stripeError(t)["type"] != "api_error" {
		t.Errorf("500: %d %v %s", r.status, r.header, r.body)
	}

	for _, st := range []int{502, 503, 504} {
		b.sim.SetFaults(stripesim.Faults{ErrorRate: 1, ErrorStatus: st})
		r := b.get(t, path)
		if r.status != st || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || json.Valid(r.body) {
			t.Errorf("%d: got %d %q %s", st, r.status, r.header.Get("Content-Type"), r.body)
		}
	}

	b.sim.ClearFaults()
	b.sim.FailNext(
		stripesim.Failure{Status: 429, RetryAfter: 1500 * time.Millisecond, ShouldRetry: "false"},
		stripesim.Failure{Status: 409},
		stripesim.Failure{Status: 400, Message: "bad thing"},
	)
	r = b.get(t, path)
	e := r.stripeError(t)
	if r.status != 429 || r.header.Get("Retry-After") != "2" || r.header.Get("Stripe-Should-Retry") != "false" ||
		e["code"] != "rate_limit" || e["type"] != "invalid_request_error" ||
		!strings.HasPrefix(e["message"].(string), "Request rate limit exceeded") {
		t.Errorf("429: %d %v %s", r.status, r.header, r.body)
	}
	if r = b.get(t, path); r.status != 409 || r.stripeError(t)["type"] != "idempotency_error" {
		t.Errorf("409: %d %s", r.status, r.body)
	}
	if r = b.get(t, path); r.status != 400 || r.stripeError(t)["message"] != "bad thing" {
		t.Errorf("400: %d %s", r.status, r.body)
	}
	if r = b.get(t, path); r.status != 200 {
		t.Errorf("after the queue: %d", r.status)
	}
}

func TestFailID(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_bad"})
	b.sim.Put(stripesim.Intent{ID: "pi_good"})
	b.sim.FailID("pi_bad", stripesim.Failure{Status: 503})
	if r := b.get(t, "/v1/payment_intents/pi_bad"); r.status != 503 {
		t.Errorf("pi_bad: %d", r.status)
	}
	if r := b.get(t, "/v1/payment_intents/pi_good"); r.status != 200 {
		t.Errorf("pi_good: %d", r.status)
	}
	b.sim.ClearFailID("pi_bad")
	if r := b.get(t, "/v1/payment_intents/pi_bad"); r.status != 200 {
		t.Errorf("pi_bad after ClearFailID: %d", r.status)
	}
}

func TestHangUntilClientGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.sim.FailID("pi_1", stripesim.Failure{Hang: true})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.sim.URL()+"/v1/payment_intents/pi_1", nil)
	req.Header.Set("Authorization", "Bearer "+b.sim.SecretKey())
	resp, err := b.client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("answered %d, want a hang", resp.StatusCode)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the client's deadline", err)
	}
	testkit.WaitFor(t, "the hung request to be counted", 5*time.Second, func() bool {
		return b.sim.Stats().Responses[stripesim.EndpointRetrieveIntent][0] == 1
	})
}

func TestCloseReleasesHangs(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{HangRate: 1}})
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, b.sim.URL()+"/v1/payment_intents", nil)
		req.Header.Set("Authorization", "Bearer "+b.sim.SecretKey())
		resp, err := b.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testkit.WaitFor(t, "the request to hang", 5*time.Second, func() bool { return b.sim.InFlight() == 1 })
	b.sim.Close()
	if b.sim.InFlight() != 0 {
		t.Fatalf("Close returned with %d requests in flight", b.sim.InFlight())
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a hung request got an answer")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client is still waiting after Close")
	}
	b.sim.Close() // idempotent
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.sim.SetFaults(stripesim.Faults{RateLimit: stripesim.RateLimit{PerSecond: 2, RetryAfter: time.Second, ShouldRetry: "false"}})
	statuses := func(n int, path string) []int {
		var out []int
		for range n {
			out = append(out, b.get(t, path).status)
		}
		return out
	}
	if got := statuses(3, "/v1/payment_intents/pi_1"); !slices.Equal(got, []int{200, 200, 429}) {
		t.Fatalf("burst: %v", got)
	}
	r := b.get(t, "/v1/payment_intents")
	e := r.stripeError(t)
	if r.status != 429 || e["code"] != "rate_limit" || e["type"] != "invalid_request_error" ||
		r.header.Get("Retry-After") != "1" || r.header.Get("Stripe-Should-Retry") != "false" ||
		r.header.Get("Stripe-Rate-Limited-Reason") != "global-rate" {
		t.Fatalf("429: %v %s", r.header, r.body)
	}
	b.clock.Advance(500 * time.Millisecond) // one token back
	if got := statuses(2, "/v1/payment_intents/pi_1"); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("after 0.5 s: %v", got)
	}

	// Per endpoint: each endpoint has its own bucket.
	b.sim.SetFaults(stripesim.Faults{RateLimit: stripesim.RateLimit{PerSecond: 1, PerEndpoint: true}})
	if got := statuses(2, "/v1/payment_intents/pi_1"); !slices.Equal(got, []int{200, 429}) {
		t.Fatalf("retrieve bucket: %v", got)
	}
	r = b.get(t, "/v1/payment_intents")
	if r.status != 200 {
		t.Fatalf("list has its own bucket: %d", r.status)
	}
	if r = b.get(t, "/v1/payment_intents"); r.header.Get("Stripe-Rate-Limited-Reason") != "endpoint-rate" {
		t.Fatalf("list, second: %d %v", r.status, r.header)
	}
}

func TestFaultsAreDeterministic(t *testing.T) {
	t.Parallel()
	sequence := func(seed uint64) []int {
		b := setup(t, stripesim.Config{Seed: seed, Faults: stripesim.Faults{ErrorRate: 0.5}})
		var out []int
		for range 40 {
			out = append(out, b.get(t, "/v1/payment_intents").status)
		}
		return out
	}
	a, again, other := sequence(7), sequence(7), sequence(8)
	if !slices.Equal(a, again) {
		t.Fatalf("seed 7 twice: %v, %v", a, again)
	}
	if slices.Equal(a, other) {
		t.Fatalf("seeds 7 and 8 gave the same sequence %v", a)
	}
	if !slices.Contains(a, 500) || !slices.Contains(a, 200) {
		t.Fatalf("ErrorRate 0.5 gave %v", a)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.get(t, "/v1/payment_intents/pi_1")
	b.get(t, "/v1/payment_intents/pi_2")
	b.get(t, "/v1/payment_intents?limit=3")
	b.get(t, "/v1/events")
	b.getAuth(t, "/v1/events", "")
	b.get(t, "/v1/nope")
	st := b.sim.Stats()
	want := map[string]map[int]int64{
		stripesim.EndpointRetrieveIntent: {200: 1, 404: 1},
		stripesim.EndpointListIntents:    {200: 1},
		stripesim.EndpointListEvents:     {200: 1, 401: 1},
		stripesim.EndpointOther:          {404: 1},
	}
	for ep, m := range want {
		for code, n := range m {
			if got := st.Responses[ep][code]; got != n {
				t.Errorf("%s %d: %d, want %d", ep, code, got, n)
			}
		}
	}
	if st.Total() != 6 || st.Status(404) != 2 || st.Requests[stripesim.EndpointRetrieveIntent] != 2 {
		t.Errorf("total %d, 404s %d, retrieves %d", st.Total(), st.Status(404), st.Requests[stripesim.EndpointRetrieveIntent])
	}
	b.sim.ResetStats()
	if b.sim.Stats().Total() != 0 {
		t.Error("ResetStats kept counts")
	}
}
