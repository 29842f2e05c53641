package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/stripesim"
)

// The built CLI on a table on Checkout Sessions: config and status show
// the detected session column, scan --once finds the lost completion, and
// payments show names the session and the PaymentIntent the row does not
// record.
func TestSessionRowsThroughTheCLI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text")
	pgtest.Exec(t, pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if _, err := b.sim.CreateSession(stripesim.Session{ID: "cs_test_cli", Created: old}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.sim.CompleteSession("cs_test_cli", stripesim.Intent{ID: "pi_of_cs_test_cli"}, false); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_checkout_session_id, status, created_at, updated_at)
		VALUES ('order_cli', 'cs_test_cli', 'pending', $1, $1) RETURNING id`, old).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, b.env, "config"); r.code != 0 || !strings.Contains(r.stdout, "stripe_checkout_session_id") {
		t.Errorf("config: %d\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, b.env, "scan", "--once", "--repair-mode", "off"); r.code != 0 {
		t.Fatalf("scan: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, b.env, "status"); r.code != 0 || !strings.Contains(r.stdout, "stripe_checkout_session_id (on)") {
		t.Errorf("status does not show the session column in use: %d\n%s", r.code, r.stdout)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND payment_id = $1", id); n != 1 {
		t.Fatalf("%d missed_success findings for the lost checkout.session.completed", n)
	}
	for _, q := range []string{strconv.FormatInt(id, 10), "cs_test_cli"} {
		r := runCLI(t, b.env, "payments", "show", q)
		if r.code != 0 || !strings.Contains(r.stdout, "cs_test_cli, its PaymentIntent pi_of_cs_test_cli (not recorded by the row)") {
			t.Errorf("payments show %s: %d\n%s%s", q, r.code, r.stdout, r.stderr)
		}
	}
	// Without the column, the same row is invalid_local_row.
	if r := runCLI(t, b.env, "scan", "--once", "--session-column", "", "--job", "no-sessions"); r.code != 0 {
		t.Fatalf("scan without the column: %d %s", r.code, r.stderr)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'invalid_local_row' AND payment_id = $1", id); n != 1 {
		t.Errorf("%d invalid_local_row findings without the session column", n)
	}
}

// A lost checkout.session.completed is applied by `events --once`, the
// catch-up's command, to the row of its session.
func TestEventsOnceAppliesSessionEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text")
	pgtest.Exec(t, pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	if _, err := b.sim.CreateSession(stripesim.Session{ID: "cs_test_events"}); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_checkout_session_id, status)
		VALUES ('order_events', 'cs_test_events', 'pending') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.sim.CompleteSession("cs_test_events", stripesim.Intent{}, false); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, b.env, "events", "--once", "--since", "1h"); r.code != 0 {
		t.Fatalf("events --once: %d %s", r.code, r.stderr)
	}
	var status, source string
	if err := pool.QueryRow(context.Background(), `SELECT p.status, coalesce((SELECT source FROM payment_transitions WHERE payment_id = p.id), '')
		FROM payments p WHERE p.id = $1`, id).Scan(&status, &source); err != nil {
		t.Fatal(err)
	}
	if status != "paid" || source != "events" {
		t.Errorf("after events --once: %s, transition by %q", status, source)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND resolved_at IS NULL"); n != 0 {
		t.Errorf("%d missing_locally findings left open for the session's intent", n)
	}
}
