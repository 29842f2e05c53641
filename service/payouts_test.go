package service_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// A payout.paid webhook reads its payout at once (long before the next
// round), and a payout.failed the catch-up finds reads it again: the
// payout is flagged failed after paid. Each through the River job the
// event's transaction inserted.
func TestPayoutEventsReadTheirPayout(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	sim := simtest.Start(t, stripesim.Config{})
	const secret = "whsec_payouts"
	old := time.Now().Add(-time.Hour)
	pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_ev_1", Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old}})
	sim.Put(stripesim.Intent{ID: "pi_ev_1", Status: payrecon.IntentSucceeded, Created: old})
	cfg := service.Config{
		HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Sweep:          sweep.Config{Batch: 50, MinCycle: time.Hour, Grace: sweep.Off},
		Stripe:         stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL()},
		WebhookSecrets: []string{secret},
		Events:         catchup.Config{Interval: time.Second},
		Payouts:        service.PayoutsConfig{Interval: time.Hour, SettleAfter: payrecon.DefaultSettleAfter},
	}
	svc, err := service.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service stopped with %v", err)
		}
	})
	testkit.WaitFor(t, "the first payouts round", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_payouts' AND state = 'completed'") == 1
	})
	// A payout made after the round: its webhook reads it.
	po, err := sim.CreatePayout(stripesim.PayoutSpec{ID: "po_event", Intents: []string{"pi_ev_1"}})
	if err != nil {
		t.Fatal(err)
	}
	var paid string
	for _, e := range sim.Events() {
		if e.Type == stripesim.EventPayoutPaid {
			paid = e.ID
		}
	}
	payload, err := sim.EventPayload(paid)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+svc.Addr()+"/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, secret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("webhook: %d", resp.StatusCode)
	}
	testkit.WaitFor(t, "the payout read after its webhook", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM stripe_payout_lines WHERE payout_id = $1", po.ID) == 2
	})
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events WHERE event_id = $1 AND outcome = $2", paid, payrecon.OutcomePayoutQueued); n != 1 {
		t.Errorf("the webhook's outcome is not %s", payrecon.OutcomePayoutQueued)
	}
	// The bank returns it; no webhook, the catch-up lists the event.
	if _, err := sim.SetPayoutStatus(po.ID, payrecon.PayoutFailed); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the failed payout read after the catch-up", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM stripe_payouts WHERE payout_id = $1 AND status = 'failed' AND paid_seen_at IS NOT NULL", po.ID) == 1
	})
	status, body := get(t, "http://"+svc.AdminAddr()+"/metrics")
	if status != 200 || !bytes.Contains([]byte(body), []byte(`payrecon_payouts_flagged{problem="failed_after_paid"} 1`)) {
		t.Errorf("metrics do not count the failed payout:\n%s", grepLines(body, "payrecon_payouts"))
	}
	// The webhook's read, and the catch-up's (payout.reconciliation_completed,
	// which no webhook delivered, and payout.failed).
	testkit.WaitFor(t, "three payout reads completed", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_payout_read' AND state = 'completed'") == 3
	})
}

func grepLines(s, sub string) string {
	var out []byte
	for _, l := range bytes.Split([]byte(s), []byte("\n")) {
		if bytes.Contains(l, []byte(sub)) {
			out = append(append(out, l...), '\n')
		}
	}
	return string(out)
}
