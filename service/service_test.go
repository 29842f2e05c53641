package service_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx pools of finished tests close their connections asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
	)
}

type bundle struct {
	svc   *service.Service
	done  chan error
	stop  context.CancelFunc
	ready chan struct{}

	once   sync.Once
	result error
	ended  chan struct{}
}

// wait waits up to d for Run to return; ok is false on a timeout.
func (b *bundle) wait(d time.Duration) (err error, ok bool) {
	b.once.Do(func() {
		go func() {
			b.result = <-b.done
			close(b.ended)
		}()
	})
	select {
	case <-b.ended:
		return b.result, true
	case <-time.After(d):
		return nil, false
	}
}

// start builds a service on a fresh database and a simulator, runs it, and
// waits until it listens.
func start(t *testing.T, rows int, mutate func(*service.Config)) *bundle {
	t.Helper()
	pool := pgtest.NewDB(t)
	ps := make([]pgtest.Payment, rows)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_svc_%d", i), Status: payrecon.StatusPending,
			UpdatedAt: time.Now().Add(-time.Hour)}
	}
	pgtest.InsertPayments(t, pool, ps)
	sim := simtest.Start(t, stripesim.Config{})
	b := &bundle{done: make(chan error, 1), ready: make(chan struct{}), ended: make(chan struct{})}
	cfg := service.Config{
		HTTPAddr:       "127.0.0.1:0",
		AdminAddr:      "127.0.0.1:0",
		Sweep:          sweep.Config{Batch: 50, MinCycle: time.Hour},
		Stripe:         stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL()},
		WebhookSecrets: []string{"whsec_test"},
		Ready:          func(string) { close(b.ready) },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := service.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	go func() { b.done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if _, ok := b.wait(30 * time.Second); !ok {
			t.Error("the service did not stop within 30 s")
		}
	})
	return b
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The service serves its two listeners, each with only its own routes, and
// stops cleanly (nil) when its context ends, closing both.
func TestRunServesAndStopsCleanly(t *testing.T) {
	t.Parallel()
	b := start(t, 0, nil)
	select {
	case <-b.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not become ready")
	}
	pub, adm := "http://"+b.svc.Addr(), "http://"+b.svc.AdminAddr()
	for _, c := range []struct {
		url    string
		status int
		has    string
	}{
		{pub + "/healthz", http.StatusOK, "ok"},
		{pub + "/readyz", http.StatusOK, "ready"},
		{pub + "/metrics", http.StatusNotFound, ""},
		{pub + "/riverui/", http.StatusNotFound, ""},
		{adm + "/healthz", http.StatusOK, "ok"},
		{adm + "/metrics", http.StatusOK, "payrecon_stripe_limiter_budget_per_second"},
	} {
		status, body := get(t, c.url)
		if status != c.status || !strings.Contains(body, c.has) {
			t.Errorf("GET %s = %d %.80q, want %d containing %q", c.url, status, body, c.status, c.has)
		}
	}
	b.stop()
	err, ok := b.wait(30 * time.Second)
	if !ok {
		t.Fatal("Run did not return within 30 s of its context ending")
	}
	if err != nil {
		t.Errorf("Run after a clean stop = %v, want nil", err)
	}
	for _, addr := range []string{b.svc.Addr(), b.svc.AdminAddr()} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Run returned", addr)
		}
	}
}

// A listener that cannot bind fails Run at once, naming the flag, and
// leaves nothing listening.
func TestRunFailsWhenAListenerCannotBind(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	b := start(t, 0, func(c *service.Config) { c.AdminAddr = busy.Addr().String() })
	err, ok := b.wait(30 * time.Second)
	if !ok {
		t.Fatal("Run did not fail")
	}
	if err == nil || !strings.Contains(err.Error(), "--admin-addr") {
		t.Errorf("Run = %v, want an error naming --admin-addr", err)
	}
}

// When one component fails (Stripe rejects the key: a configuration error
// ends the sweep), Run stops the others and returns that error.
func TestRunStopsEverythingWhenTheSweepFails(t *testing.T) {
	t.Parallel()
	b := start(t, 10, func(c *service.Config) { c.Stripe.SecretKey = "sk_test_wrong" })
	err, ok := b.wait(30 * time.Second)
	if !ok {
		t.Fatal("Run did not stop after the sweep failed")
	}
	if !errors.Is(err, payrecon.ErrConfig) {
		t.Errorf("Run = %v, want the sweep's configuration error", err)
	}
	for _, addr := range []string{b.svc.Addr(), b.svc.AdminAddr()} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after the sweep failed", addr)
		}
	}
}
