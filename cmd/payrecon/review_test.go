package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// A first day in review mode, through the CLI: the sweep records findings
// and holds their repairs; a drain applies nothing; status, repairs list
// and the metrics' source show them held; a payment that heals meanwhile
// (the application's own webhook marks it paid, the next sweep sees it in
// sync) has its held command dropped at approval, never applied; the others
// are applied exactly once after `repairs approve --all`.
func TestReviewModeEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := [][2]string{{"pending", "succeeded"}, {"pending", "succeeded"}, {"pending", "succeeded"}, {"pending", "canceled"}}
	for range 10 {
		rows = append(rows, [2]string{"paid", "succeeded"})
	}
	ids := b.seed(t, rows)
	pool := pgtestPool(t, b.url)
	env := map[string]string{"PAYRECON_REPAIR_MODE": "review", "USER": "tester"}
	for k, v := range b.env {
		env[k] = v
	}

	r := runCLI(t, env, "scan", "--once", "--rps", "0", "--grace", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "repair commands held for review") || !strings.Contains(r.stdout, "nothing was repaired") {
		t.Fatalf("scan in review: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	untouched := func(when string, n int) {
		t.Helper()
		if got := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = ANY($1) AND status = 'pending' AND version = 0", ids[:4]); got != n {
			t.Errorf("%s: %d of the 4 drifted payments untouched, want %d", when, got, n)
		}
	}
	untouched("after the scan", 4)
	if r = runCLI(t, env, "relay", "--drain", "--json"); r.code != 0 {
		t.Fatalf("drain: exit %d: %s", r.code, r.stderr)
	}
	var drained relay.DrainReport
	if err := json.Unmarshal([]byte(r.stdout), &drained); err != nil || drained.Applied != 0 {
		t.Fatalf("a drain before approval: %s (%v); want nothing applied", r.stdout, err)
	}
	untouched("after a drain", 4)

	var st postgres.Status
	if r = runCLI(t, env, "status", "--json"); r.code != 0 {
		t.Fatalf("status: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.HeldRepairs != 4 || st.OutboxBacklog != 0 {
		t.Fatalf("status --json: held %d, backlog %d (%v); want 4 held, no backlog", st.HeldRepairs, st.OutboxBacklog, err)
	}
	if r = runCLI(t, env, "status"); !strings.Contains(r.stdout, "held for review\t") && !strings.Contains(r.stdout, "held for review ") {
		t.Errorf("status does not show the held repairs:\n%s", r.stdout)
	}

	// Payment 0 heals: the application marks it paid, the next sweep sees
	// it in sync and resolves its finding.
	pgtest.Exec(t, pool, "UPDATE payments SET status = 'paid', version = version + 1, updated_at = now() - interval '1 hour' WHERE id = $1", ids[0])
	if r = runCLI(t, env, "scan", "--once", "--rps", "0", "--grace", "0"); r.code != 0 {
		t.Fatalf("second scan: exit %d: %s", r.code, r.stderr)
	}
	var held []postgres.HeldRepair
	if r = runCLI(t, env, "repairs", "list", "--json"); r.code != 0 {
		t.Fatalf("repairs list: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &held); err != nil || len(held) != 3 {
		t.Fatalf("repairs list --json after the heal: %s (%v); want 3", r.stdout, err)
	}
	for _, h := range held {
		if h.PaymentID == nil || *h.PaymentID == ids[0] {
			t.Errorf("the healed payment's command is still listed: %+v", h)
		}
	}

	if r = runCLI(t, env, "repairs", "approve"); r.code != 2 {
		t.Errorf("repairs approve with nothing named: exit %d, want 2", r.code)
	}
	if r = runCLI(t, env, "repairs", "approve", "--all"); r.code != 0 || !strings.Contains(r.stdout, "approved by tester: 3") || !strings.Contains(r.stdout, "dropped") {
		t.Fatalf("repairs approve --all: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = runCLI(t, env, "relay", "--drain", "--json"); r.code != 0 {
		t.Fatalf("drain: exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &drained); err != nil || drained.Applied != 3 {
		t.Fatalf("the drain after approval: %s (%v); want 3 applied", r.stdout, err)
	}
	if got := pgtest.Count(t, pool, "SELECT count(*) FROM payment_transitions WHERE source = 'repair'"); got != 3 {
		t.Errorf("repair transitions: %d, want 3", got)
	}
	if got := pgtest.Count(t, pool, "SELECT count(*) FROM payment_transitions WHERE payment_id = $1 AND source = 'repair'", ids[0]); got != 0 {
		t.Errorf("the healed payment was repaired anyway")
	}
	if got := pgtest.Count(t, pool, "SELECT count(*) FROM outbox WHERE approved_by = 'tester'"); got != 3 {
		t.Errorf("commands approved by tester: %d, want 3", got)
	}
	if r = runCLI(t, env, "repairs", "approve", "1", "2"); r.code != 1 || !strings.Contains(r.stderr, "were not held") {
		t.Errorf("approving applied commands again: exit %d, %s", r.code, r.stderr)
	}
	if got := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = ANY($1) AND version = 1", ids[:4]); got != 4 {
		t.Errorf("payments changed once each: %d, want 4", got)
	}
}

// Repair mode off: findings are recorded, nothing is queued.
func TestRepairModeOffRecordsFindingsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"pending", "succeeded"}, {"pending", "canceled"}, {"paid", "canceled"}})
	pool := pgtestPool(t, b.url)
	r := runCLI(t, b.env, "scan", "--once", "--rps", "0", "--repair-mode", "off")
	if r.code != 0 || !strings.Contains(r.stdout, "(--repair-mode off)") {
		t.Fatalf("scan off: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for what, c := range map[string]struct {
		sql  string
		want int
	}{
		"open findings":   {"SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL", 3},
		"outbox rows":     {"SELECT count(*) FROM outbox", 0},
		"river jobs":      {"SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair'", 0},
		"payments moved":  {"SELECT count(*) FROM payments WHERE version <> 0", 0},
		"repair commands": {"SELECT count(*) FROM reconciliation_findings WHERE repair_command IS NOT NULL", 0},
	} {
		if got := pgtest.Count(t, pool, c.sql); got != c.want {
			t.Errorf("%s: %d, want %d", what, got, c.want)
		}
	}
	if r = runCLI(t, b.env, "scan", "--once", "--repair-mode", "sometimes"); r.code != 2 {
		t.Errorf("--repair-mode sometimes: exit %d, want 2 (%s)", r.code, r.stderr)
	}
}
