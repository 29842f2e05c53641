package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
)

// --notify-url needs --notify-secret: exit 2 and one line, before anything
// connects, from every command that takes them.
func TestNotifyURLNeedsASecret(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none", "PAYRECON_NOTIFY_URL": "http://127.0.0.1:9/hook"}
	for _, args := range [][]string{{"run"}, {"relay"}, {"events", "--once"}} {
		r := runCLI(t, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--notify-secret") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming --notify-secret", args, r.code, r.stderr)
		}
	}
	r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none"}, "relay", "--notify-url", "ftp://x", "--notify-secret", "s")
	if r.code != 2 || !strings.Contains(r.stderr, "not an http(s) URL") {
		t.Errorf("ftp URL: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A repair's transition is in the payment's history, found by id, order id
// or PaymentIntent id, and in `findings show`; with --notify-url the drain
// that applied it queued its notification in the same transaction.
func TestPaymentsShowHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"pending", "succeeded"}, {"paid", "succeeded"}})
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0"); r.code != 0 {
		t.Fatalf("scan: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, b.env, "relay", "--drain", "--notify-url", "http://127.0.0.1:9/hook", "--notify-secret", "s"); r.code != 0 {
		t.Fatalf("relay --drain: %d %s", r.code, r.stderr)
	}
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_notify'"); n != 1 {
		t.Errorf("%d notification jobs, want 1", n)
	}
	// Nothing listens on the notify URL: the notification waits, and status
	// says so.
	var st struct {
		Notifications *struct {
			Backlog     int64 `json:"backlog"`
			DeadLetters int64 `json:"dead_letters"`
		} `json:"notifications"`
	}
	mustJSON(t, runCLI(t, b.env, "status", "--json"), &st)
	if st.Notifications == nil || st.Notifications.Backlog != 1 || st.Notifications.DeadLetters != 0 {
		t.Errorf("status notifications = %+v, want a backlog of 1", st.Notifications)
	}
	if r := runCLI(t, b.env, "status"); !strings.Contains(r.stdout, "notifications") {
		t.Errorf("status does not show the notifications:\n%s", r.stdout)
	}
	var order string
	if err := pool.QueryRow(context.Background(), "SELECT order_id FROM payments WHERE id = $1", ids[0]).Scan(&order); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{fmt.Sprint(ids[0]), order, "pi_cli_0000"} {
		var h paymentHistory
		mustJSON(t, runCLI(t, b.env, "payments", "show", q, "--json"), &h)
		if h.Payment.ID != ids[0] || len(h.Transitions) != 1 || len(h.Findings) != 1 || len(h.Repairs) != 1 {
			t.Fatalf("payments show %s = %+v", q, h)
		}
		tr := h.Transitions[0]
		if tr.From != payrecon.StatusPending || tr.To != payrecon.StatusPaid || tr.Source != payrecon.SourceRepair ||
			tr.SourceRef != fmt.Sprint(h.Repairs[0].OutboxID) {
			t.Errorf("transition %+v", tr)
		}
	}
	r := runCLI(t, b.env, "payments", "show", fmt.Sprint(ids[1]))
	if r.code != 0 || !strings.Contains(r.stdout, "transitions  none") {
		t.Errorf("an untouched payment: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, b.env, "payments", "show", "nope"); r.code != 1 || !strings.Contains(r.stderr, "no payment") {
		t.Errorf("unknown payment: %d %s", r.code, r.stderr)
	}
	var fid int64
	if err := pool.QueryRow(context.Background(), "SELECT id FROM reconciliation_findings WHERE payment_id = $1", ids[0]).Scan(&fid); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, b.env, "findings", "show", fmt.Sprint(fid))
	if r.code != 0 || !strings.Contains(r.stdout, "pending → paid (version 1) by repair") {
		t.Errorf("findings show: %d\n%s", r.code, r.stdout)
	}
}
