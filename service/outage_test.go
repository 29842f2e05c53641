package service_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pglocal"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// A database that refuses connections for a while (here: a throwaway
// cluster stopped and started again) does not stop the service: while it
// lasts /readyz and the webhook answer 503; the process stays up, and once
// the database is back the sweep goes on by itself and the webhook records
// events again (issue 13, defect 2).
func TestRunSurvivesADatabaseRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl, err := pglocal.StartCluster(ctx, nil)
	if errors.Is(err, pglocal.ErrNotInstalled) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	pool, err := pgxpool.New(ctx, cl.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := postgres.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	const rows = 3000
	ps := make([]pgtest.Payment, rows)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_out_%d", i), Status: payrecon.StatusPaid, UpdatedAt: time.Now().Add(-time.Hour)}
	}
	pgtest.InsertPayments(t, pool, ps)
	sim := simtest.Start(t, stripesim.Config{})
	for i := range ps {
		sim.Put(stripesim.Intent{ID: ps[i].IntentID, Amount: 1000, Currency: "usd", Status: payrecon.IntentSucceeded, Created: time.Now().Add(-2 * time.Hour)})
	}

	ready := make(chan struct{})
	svc, err := service.New(pool, service.Config{
		HTTPAddr:  "127.0.0.1:0",
		AdminAddr: "127.0.0.1:0",
		// A slow, endless sweep: the outage lands in the middle of a cycle.
		Sweep: sweep.Config{Batch: 50, MinCycle: sweep.Off, Grace: sweep.Off, Mode: sweep.ModeRetrieve,
			RetryPause: 200 * time.Millisecond, RetryPauseMax: time.Second},
		RPS:            300,
		Stripe:         stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL()},
		WebhookSecrets: []string{"whsec_outage"},
		Ready:          func(string) { close(ready) },
	})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(rctx) }()
	t.Cleanup(func() {
		stop()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Error("the service did not stop within 60 s")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run returned at start: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the service never listened")
	}
	pub := "http://" + svc.Addr()
	verified := func() int {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL")
	}
	testkit.WaitFor(t, "the sweep to verify some rows", 60*time.Second, func() bool { return verified() >= 200 })

	if err := cl.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	if code, body := get(t, pub+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the database down = %d %q, want 503", code, body)
	}
	if code := postEvent(t, pub, "evt_outage_1", ps[0].IntentID); code != http.StatusServiceUnavailable {
		t.Errorf("webhook with the database down = %d, want 503", code)
	}
	// Several seconds of refused connections: the sweep, the lease and the
	// workers all fail meanwhile.
	for time.Since(down) < 5*time.Second {
		select {
		case err := <-done:
			t.Fatalf("Run returned while the database was down: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := cl.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	testkit.WaitFor(t, "/readyz to answer 200 again", 60*time.Second, func() bool {
		code, _ := get(t, pub+"/readyz")
		return code == http.StatusOK
	})
	if code := postEvent(t, pub, "evt_outage_2", ps[1].IntentID); code != http.StatusOK {
		t.Errorf("webhook after the restart = %d, want 200", code)
	}
	testkit.WaitFor(t, "the sweep to verify rows after the restart", 90*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at > $1", back) >= 200
	})
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
	t.Logf("outage %s; resumed and verifying %s after the restart", back.Sub(down).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
}

// postEvent posts a signed payment_intent.succeeded event to the webhook.
func postEvent(t *testing.T, base, id, intent string) int {
	t.Helper()
	now := time.Now()
	payload := fmt.Appendf(nil, `{"id":%q,"object":"event","type":"payment_intent.succeeded","api_version":"2019-02-19","created":%d,"data":{"object":{"id":%q,"object":"payment_intent","status":"succeeded"}}}`,
		id, now.Unix(), intent)
	req, err := http.NewRequest(http.MethodPost, base+"/webhooks/stripe", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, "whsec_outage", now))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST webhook: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
