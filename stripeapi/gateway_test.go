package stripeapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg  stripeapi.Config
		want string
	}{
		{stripeapi.Config{}, "STRIPE_SECRET_KEY"},
		{stripeapi.Config{SecretKey: "sk_test_x", APIBase: "ftp://example.com"}, "STRIPE_API_BASE"},
		{stripeapi.Config{SecretKey: "sk_test_x", APIBase: "localhost:12111"}, "STRIPE_API_BASE"},
		{stripeapi.Config{SecretKey: "sk_test_x", APIBase: "http://user:pw@example.com"}, "STRIPE_API_BASE"},
		{stripeapi.Config{SecretKey: "sk_test_x", APIBase: "http://proxy.example.com/stripe"}, "STRIPE_API_BASE"},
	}
	for _, tt := range tests {
		_, err := stripeapi.New(tt.cfg)
		var ce *payrecon.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Cause, tt.want) || strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%+v) = %v, want a ConfigError naming %s", tt.cfg, err, tt.want)
		}
	}
}

func TestRetrieveIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	created := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	b.sim.Put(stripesim.Intent{ID: "pi_1", Status: payrecon.IntentRequiresCapture, Created: created})

	got, err := b.gw.RetrieveIntent(context.Background(), "pi_1")
	if err != nil {
		t.Fatal(err)
	}
	want := payrecon.Intent{ID: "pi_1", Status: payrecon.IntentRequiresCapture, Created: created,
		Amount: 1000, Currency: "usd", Metadata: map[string]string{}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, outcomes := b.rec.snapshot(); !slices.Equal(outcomes, []string{"retrieve:ok"}) {
		t.Errorf("outcomes %v", outcomes)
	}
}

func TestListIntents(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := b.sim.Seed(250, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: fmt.Sprintf("pi_%03d", i), Created: base.Add(time.Duration(i) * time.Second), Status: payrecon.IntentSucceeded}
	}); err != nil {
		t.Fatal(err)
	}

	// Default limit 100, one request per call, paginated by the caller.
	var ids []string
	q := payrecon.ListQuery{}
	for calls := 1; ; calls++ {
		b.sim.ResetStats()
		page, err := b.gw.ListIntents(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if n := b.sim.Stats().Total(); n != 1 {
			t.Fatalf("call %d made %d requests", calls, n)
		}
		for _, in := range page.Intents {
			ids = append(ids, in.ID)
			if in.Status != payrecon.IntentSucceeded || in.Created.Before(base) {
				t.Fatalf("intent %+v", in)
			}
		}
		if !page.HasMore {
			if calls != 3 {
				t.Fatalf("%d calls for 250 intents", calls)
			}
			break
		}
		q.StartingAfter = ids[len(ids)-1]
	}
	if len(ids) != 250 || ids[0] != "pi_249" || ids[249] != "pi_000" {
		t.Fatalf("%d ids, %s … %s", len(ids), ids[0], ids[len(ids)-1])
	}

	// Both bounds are inclusive; sub-second parts are truncated.
	page, err := b.gw.ListIntents(context.Background(), payrecon.ListQuery{
		CreatedGTE: base.Add(10*time.Second + 900*time.Millisecond),
		CreatedLTE: base.Add(14*time.Second + 100*time.Millisecond),
		Limit:      3,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range page.Intents {
		got = append(got, in.ID)
	}
	if want := []string{"pi_014", "pi_013", "pi_012"}; !slices.Equal(got, want) || !page.HasMore {
		t.Fatalf("window: %v has_more=%v, want %v true", got, page.HasMore, want)
	}
}

// unavailable asserts err is an *UnavailableError and returns it.
func unavailable(t *testing.T, err error) *payrecon.UnavailableError {
	t.Helper()
	var u *payrecon.UnavailableError
	if !errors.As(err, &u) || !errors.Is(err, payrecon.ErrUnavailable) {
		t.Fatalf("got %v (%T), want an *UnavailableError", err, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, payrecon.ErrConfig) {
		t.Fatalf("unavailable error %v also matches a context or config error", err)
	}
	return u
}

func configError(t *testing.T, err error) *payrecon.ConfigError {
	t.Helper()
	var c *payrecon.ConfigError
	if !errors.As(err, &c) || !errors.Is(err, payrecon.ErrConfig) || errors.Is(err, payrecon.ErrUnavailable) {
		t.Fatalf("got %v (%T), want a *ConfigError", err, err)
	}
	return c
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, err error)
	tests := []struct {
		name     string
		faults   stripesim.Faults
		fail     []stripesim.Failure
		id       string // default pi_1
		requests int64
		check    check
		outcome  string
	}{
		{
			name: "404 resource_missing", id: "pi_missing", requests: 1, outcome: "not_found",
			check: func(t *testing.T, err error) {
				if !errors.Is(err, payrecon.ErrNotFound) || errors.Is(err, payrecon.ErrUnavailable) {
					t.Fatalf("got %v", err)
				}
			},
		},
		{
			name: "401 revoked key", faults: stripesim.Faults{Unauthorized: true}, requests: 1, outcome: "config_error",
			check: func(t *testing.T, err error) {
				if c := configError(t, err); c.StatusCode != 401 || !strings.Contains(c.Cause, "rejected the API key") || !strings.Contains(c.Cause, "STRIPE_SECRET_KEY") {
					t.Fatalf("cause %q", c.Cause)
				}
			},
		},
		{
			name: "403 restricted key", faults: stripesim.Faults{Forbidden: true}, requests: 1, outcome: "config_error",
			check: func(t *testing.T, err error) {
				if c := configError(t, err); c.StatusCode != 403 || !strings.Contains(c.Cause, "lacks the PaymentIntents: Read permission") {
					t.Fatalf("cause %q", c.Cause)
				}
			},
		},
		{
			name: "400", fail: []stripesim.Failure{{Status: 400, Message: "Invalid string: abc"}}, requests: 1, outcome: "config_error",
			check: func(t *testing.T, err error) {
				if c := configError(t, err); c.StatusCode != 400 || !strings.Contains(c.Cause, "Invalid string: abc") {
					t.Fatalf("cause %q", c.Cause)
				}
			},
		},
		{
			name: "429 with Retry-After", fail: repeat(3, stripesim.Failure{Status: 429, RetryAfter: 2 * time.Second}), requests: 3, outcome: "rate_limited",
			check: func(t *testing.T, err error) {
				u := unavailable(t, err)
				if u.StatusCode != 429 || !u.RateLimited || u.RetryAfter != 2*time.Second || !strings.Contains(err.Error(), "rate_limit") {
					t.Fatalf("%+v: %v", u, err)
				}
			},
		},
		{
			name: "500 JSON", faults: stripesim.Faults{ErrorRate: 1}, requests: 3, outcome: "unavailable",
			check: func(t *testing.T, err error) {
				if u := unavailable(t, err); u.StatusCode != 500 || u.RateLimited || !strings.Contains(err.Error(), "api_error") {
					t.Fatalf("%+v: %v", u, err)
				}
			},
		},
		{
			name: "503 HTML", faults: stripesim.Faults{ErrorRate: 1, ErrorStatus: 503}, requests: 3, outcome: "unavailable",
			check: func(t *testing.T, err error) {
				if u := unavailable(t, err); u.StatusCode != 503 || !strings.Contains(err.Error(), "without a Stripe error body") || strings.Contains(err.Error(), "<html>") {
					t.Fatalf("%+v: %v", u, err)
				}
			},
		},
		{
			name: "409", fail: repeat(3, stripesim.Failure{Status: 409}), requests: 3, outcome: "unavailable",
			check: func(t *testing.T, err error) {
				if u := unavailable(t, err); u.StatusCode != 409 {
					t.Fatalf("%+v", u)
				}
			},
		},
		{
			name: "Stripe-Should-Retry false stops retrying", fail: []stripesim.Failure{{Status: 500, ShouldRetry: "false"}}, requests: 1, outcome: "unavailable",
			check: func(t *testing.T, err error) { unavailable(t, err) },
		},
		{
			name: "Stripe-Should-Retry true retries a 400", fail: []stripesim.Failure{{Status: 400, ShouldRetry: "true"}}, requests: 2, outcome: "ok",
			check: func(t *testing.T, err error) {
				if err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			name: "hang past the timeout", fail: repeat(3, stripesim.Failure{Hang: true}), requests: 3, outcome: "unavailable",
			check: func(t *testing.T, err error) {
				if u := unavailable(t, err); u.StatusCode != 0 || !strings.Contains(err.Error(), "no answer within 100ms") {
					t.Fatalf("%+v: %v", u, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Only hangs need a short per-attempt timeout; on a loaded
			// machine (-race, other work) 100 ms also cuts off answers that
			// are merely slow, and the retry then doubles the requests.
			timeout := 10 * time.Second
			if len(tt.fail) > 0 && tt.fail[0].Hang {
				timeout = 100 * time.Millisecond
			}
			b := setup(t, stripesim.Config{Faults: tt.faults}, func(c *stripeapi.Config) { c.Timeout = timeout })
			b.sim.Put(stripesim.Intent{ID: "pi_1"})
			b.sim.FailNext(tt.fail...)
			id := tt.id
			if id == "" {
				id = "pi_1"
			}
			_, err := b.gw.RetrieveIntent(context.Background(), id)
			tt.check(t, err)
			if err != nil && !strings.Contains(err.Error(), id) {
				t.Errorf("error %q does not name the intent", err)
			}
			// Hung requests are counted when the server notices the client left.
			testkit.WaitFor(t, "the requests to be counted", 5*time.Second, func() bool { return b.sim.Stats().Total() >= tt.requests })
			if got := b.sim.Stats().Total(); got != tt.requests {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if _, outcomes := b.rec.snapshot(); !slices.Equal(outcomes, []string{"retrieve:" + tt.outcome}) {
				t.Errorf("outcomes %v, want retrieve:%s", outcomes, tt.outcome)
			}
		})
	}
}

func repeat(n int, f stripesim.Failure) []stripesim.Failure {
	out := make([]stripesim.Failure, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func TestWrongKeyAndWrongBase(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, func(c *stripeapi.Config) { c.SecretKey = "sk_test_wrong" })
	_, err := b.gw.RetrieveIntent(context.Background(), "pi_1")
	if c := configError(t, err); c.StatusCode != 401 {
		t.Fatalf("%+v", c)
	}

	// A server that is not Stripe's API (wrong STRIPE_API_BASE): 404 without
	// resource_missing is a configuration error, not "not found".
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"Unrecognized request URL (GET: %s).","type":"invalid_request_error"}}`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: "sk_test_x", APIBase: srv.URL, HTTPClient: newClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gw.RetrieveIntent(context.Background(), "pi_1")
	if c := configError(t, err); c.StatusCode != 404 || !strings.Contains(c.Cause, "Unrecognized request URL") || !strings.Contains(c.Cause, "STRIPE_API_BASE") {
		t.Fatalf("%+v", c)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rec := &recorder{reg: prometheus.NewRegistry()}
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: "sk_test_x", APIBase: "http://" + addr,
		HTTPClient: newClient(t), SleepFunc: rec.sleep, JitterFunc: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gw.ListIntents(context.Background(), payrecon.ListQuery{})
	if u := unavailable(t, err); u.StatusCode != 0 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("%+v: %v", u, err)
	}
	if waits, _ := rec.snapshot(); !slices.Equal(waits, []time.Duration{500 * time.Millisecond, time.Second}) {
		t.Fatalf("waits %v", waits)
	}
}

func TestRetriesThenSuccess(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.sim.FailNext(stripesim.Failure{Status: 503}, stripesim.Failure{Status: 500})
	if _, err := b.gw.RetrieveIntent(context.Background(), "pi_1"); err != nil {
		t.Fatal(err)
	}
	waits, outcomes := b.rec.snapshot()
	// Base 500 ms doubling, jittered down by half of 0.5.
	if !slices.Equal(waits, []time.Duration{375 * time.Millisecond, 750 * time.Millisecond}) {
		t.Errorf("waits %v", waits)
	}
	if !slices.Equal(outcomes, []string{"retrieve:ok"}) {
		t.Errorf("outcomes %v", outcomes)
	}
	logs := b.logs.String()
	if strings.Count(logs, "stripe request failed; retrying") != 2 || !strings.Contains(logs, "status=503") || !strings.Contains(logs, "request_id=req_") {
		t.Errorf("logs:\n%s", logs)
	}
}

func TestRetryAfterIsHonouredAndCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, func(c *stripeapi.Config) { c.MaxRetries = 1 })
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	b.sim.FailNext(stripesim.Failure{Status: 429, RetryAfter: 3 * time.Second}, stripesim.Failure{Status: 429, RetryAfter: 10 * time.Minute})
	_, err := b.gw.RetrieveIntent(context.Background(), "pi_1")
	if u := unavailable(t, err); u.RetryAfter != stripeapi.MaxRetryAfterDefault {
		t.Fatalf("RetryAfter %s, want the cap", u.RetryAfter)
	}
	if waits, _ := b.rec.snapshot(); !slices.Equal(waits, []time.Duration{3 * time.Second}) {
		t.Fatalf("waits %v", waits)
	}
}

func TestNoRetriesWhenDisabled(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{ErrorRate: 1}}, func(c *stripeapi.Config) { c.MaxRetries = -1 })
	_, err := b.gw.ListIntents(context.Background(), payrecon.ListQuery{})
	unavailable(t, err)
	if n := b.sim.Stats().Total(); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

func TestCallerCancellation(t *testing.T) {
	t.Parallel()

	t.Run("during a hang", func(t *testing.T) {
		t.Parallel()
		b := setup(t, stripesim.Config{Faults: stripesim.Faults{HangRate: 1}}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := b.gw.RetrieveIntent(ctx, "pi_1")
			errc <- err
		}()
		testkit.WaitFor(t, "the request to hang", 5*time.Second, func() bool { return b.sim.InFlight() == 1 })
		cancel()
		err := <-errc
		if !errors.Is(err, context.Canceled) || errors.Is(err, payrecon.ErrUnavailable) {
			t.Fatalf("got %v", err)
		}
		if _, outcomes := b.rec.snapshot(); !slices.Equal(outcomes, []string{"retrieve:canceled"}) {
			t.Errorf("outcomes %v", outcomes)
		}
	})

	t.Run("during the backoff", func(t *testing.T) {
		t.Parallel()
		sleeping := make(chan struct{})
		b := setup(t, stripesim.Config{Faults: stripesim.Faults{ErrorRate: 1}}, func(c *stripeapi.Config) {
			c.BackoffBase = time.Hour
			c.BackoffMax = time.Hour
			c.SleepFunc = func(ctx context.Context, d time.Duration) error {
				close(sleeping)
				<-ctx.Done()
				return ctx.Err()
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := b.gw.ListIntents(ctx, payrecon.ListQuery{})
			errc <- err
		}()
		<-sleeping
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) || errors.Is(err, payrecon.ErrUnavailable) {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("deadline shorter than the backoff", func(t *testing.T) {
		t.Parallel()
		b := setup(t, stripesim.Config{Faults: stripesim.Faults{ErrorRate: 1}}, func(c *stripeapi.Config) {
			c.BackoffBase = time.Hour
			c.BackoffMax = time.Hour
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := b.gw.ListIntents(ctx, payrecon.ListQuery{})
		if u := unavailable(t, err); u.StatusCode != 500 {
			t.Fatalf("%+v", u)
		}
		if waits, _ := b.rec.snapshot(); len(waits) != 0 {
			t.Fatalf("waited %v past the caller's deadline", waits)
		}
	})
}

func TestSecretKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	const key = "sk_test_51SuperSecretKeyValue9876"
	scenarios := []struct {
		name   string
		simKey string
		faults stripesim.Faults
		fail   []stripesim.Failure
	}{
		{name: "401 with Stripe's masked key", simKey: "sk_test_other"},
		{name: "401 toggle", simKey: key, faults: stripesim.Faults{Unauthorized: true}},
		{name: "403 with the masked key", simKey: key, faults: stripesim.Faults{Forbidden: true}},
		{name: "400 echoing the key", simKey: key, fail: []stripesim.Failure{{Status: 400, Message: "Bad key " + key}}},
		{name: "retried 429 and 500 echoing the key", simKey: key, fail: []stripesim.Failure{
			{Status: 429, Message: "slow down " + key}, {Status: 500, Message: "oops " + key}, {Status: 500, Message: "oops " + key}}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, stripesim.Config{SecretKey: sc.simKey, Faults: sc.faults}, func(c *stripeapi.Config) { c.SecretKey = key })
			b.sim.FailNext(sc.fail...)
			_, err := b.gw.RetrieveIntent(context.Background(), "pi_1")
			if err == nil {
				t.Fatal("no error")
			}
			for what, text := range map[string]string{"error": err.Error(), "logs": b.logs.String()} {
				if strings.Contains(text, key) || strings.Contains(text, "9876") || strings.Contains(text, "sk_test_") {
					t.Errorf("%s shows the key: %s", what, text)
				}
			}
		})
	}
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{ErrorRate: 0.2}}, nil)
	if err := b.sim.Seed(100, func(i int) stripesim.Intent { return stripesim.Intent{ID: fmt.Sprintf("pi_%d", i)} }); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 100)
	for i := range 100 {
		go func() {
			_, err := b.gw.RetrieveIntent(context.Background(), fmt.Sprintf("pi_%d", i))
			if err != nil && !errors.Is(err, payrecon.ErrUnavailable) {
				errc <- err
				return
			}
			errc <- nil
		}()
	}
	for range 100 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}
