package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
)

// payrecon run with the events catch-up and the recent window: a lost
// payment_intent.succeeded is applied by the catch-up, the recent window
// completes cycles of its own job, and both show in status and /metrics.
func TestRunCatchesUpEventsAndSweepsTheRecentWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}, {"pending", "requires_payment_method"}, {"paid", "succeeded"}})
	adminAddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--http-addr", freeAddr(t), "--admin-addr", adminAddr, "--min-cycle", "1h",
			"--events-interval", "1s", "--recent", "72h", "--recent-interval", "1s", "--workers", "2"},
			func(k string) string { return b.env[k] }, &out, &errb)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v\n%s", err, errb.String())
		}
	}()
	pool := pgtestPool(t, b.url)
	testkit.WaitFor(t, "the events cursor and two completed recent cycles", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM stripe_events_cursor WHERE checked_at IS NOT NULL") == 1 &&
			pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_cursor WHERE job = $1 AND last_cycle_completed_at > cycle_started_at - interval '1 hour' AND last_cycle_rows = 3",
				"payments-vs-stripe"+payrecon.RecentJobSuffix) == 1
	})
	// The webhook is lost: the catch-up (or the recent window, racing it
	// here at 1 s) applies it once, long before the next full cycle.
	if _, err := b.sim.SetStatus("pi_cli_0001", payrecon.IntentSucceeded); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the lost event to be caught up", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events WHERE payment_intent_id = 'pi_cli_0001'") == 1
	})
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE stripe_payment_intent_id = 'pi_cli_0001' AND status = 'paid' AND version = 1"); n != 1 {
		t.Error("the lost event's payment is not paid after exactly one transition")
	}
	code, metrics := httpGet("http://" + adminAddr + "/metrics")
	for _, want := range []string{`payrecon_events_cursor_age_seconds{job="events"}`, `payrecon_sweep_cycle_age_seconds{job="payments-vs-stripe/recent"}`,
		`payrecon_events_lease_held 1`, `payrecon_events_detection_delay_seconds_count`} {
		if code != 200 || !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	r := runCLI(t, b.env, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "job payments-vs-stripe/recent") || !strings.Contains(r.stdout, "events events") {
		t.Errorf("status:\n%s%s", r.stdout, r.stderr)
	}
}
