package main

import (
	"encoding/json"
	"fmt"
	"github.com/payrecon/payrecon/stripesim"
	"strings"
	"testing"

	"github.com/payrecon/payrecon/internal/pgtest"
)

// --ignore-kinds with a kind payrecon does not know is a configuration
// error, exit 2, one line, before anything runs.
func TestIgnoreKindsUnknownIsExit2(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"config", "--ignore-kinds", "partially_refunded,refundd"},
		{"scan", "--once", "--ignore-kinds", "refundd"},
		{"status", "--ignore-kinds", "refundd"},
	} {
		r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none"}, args...)
		if r.code != 2 || !strings.Contains(r.stderr, `"refundd" is not a finding kind`) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r := runCLI(t, map[string]string{"PAYRECON_IGNORE_KINDS": "nope"}, "config")
	if r.code != 2 {
		t.Errorf("PAYRECON_IGNORE_KINDS=nope: exit %d", r.code)
	}
	r = runCLI(t, map[string]string{}, "config", "--intent-metadata", "novalue")
	if r.code != 2 || !strings.Contains(r.stderr, "KEY=VALUE") {
		t.Errorf("--intent-metadata novalue: exit %d, %q", r.code, r.stderr)
	}
}

// config shows the money settings from flags and the environment.
func TestConfigShowsMoney(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{"PAYRECON_AMOUNT_COLUMN": "total_minor", "PAYRECON_IGNORE_KINDS": "partially_refunded"},
		"config", "--json", "--currency-column", "ccy", "--intent-metadata", "app=shop")
	if r.code != 0 {
		t.Fatalf("config exit %d: %s", r.code, r.stderr)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m["amount_column"], "total_minor") || !strings.HasPrefix(m["currency_column"], "ccy") ||
		m["ignore_kinds"] != "partially_refunded" || m["intent_metadata"] != "app=shop" {
		t.Errorf("config = %v", m)
	}
}

// Without the columns the scan says once that the amount and currency
// checks are off and status shows it; with them (after a restart) the scan
// records the money kinds, except ignored ones, and status shows them on.
func TestScanMoneyColumnsAndIgnoreKinds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"paid", "succeeded"}, {"paid", "succeeded"}, {"paid", "succeeded"}})
	pool := pgtestPool(t, b.url)
	if _, err := b.sim.Refund("pi_cli_0001", 100); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, b.env, "scan", "--once", "--rps", "0")
	if r.code != 0 || strings.Count(r.stderr, "amount check off") != 1 || strings.Count(r.stderr, "currency check off") != 1 {
		t.Fatalf("scan without columns: exit %d\n%s", r.code, r.stderr)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'partially_refunded'"); n != 1 {
		t.Errorf("%d partially_refunded findings without the columns, want 1 (the charge is judged)", n)
	}
	id := pgtest.Count(t, pool, "SELECT id FROM reconciliation_findings WHERE kind = 'partially_refunded'")
	r = runCLI(t, b.env, "findings", "show", fmt.Sprint(id))
	if r.code != 0 || !strings.Contains(r.stdout, "1,000 USD captured, 100 refunded on charge ") {
		t.Errorf("findings show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, b.env, "status")
	if r.code != 0 || !strings.Contains(r.stdout, `amount amount (off: payments has no column "amount")`) {
		t.Errorf("status without columns: %s", r.stdout)
	}

	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN amount integer, ADD COLUMN currency varchar(3)")
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 1000, currency = 'USD'")
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 999 WHERE id = $1", ids[0])
	pgtest.Exec(t, pool, "UPDATE payments SET currency = 'EUR' WHERE id = $1", ids[2])
	env := map[string]string{"PAYRECON_IGNORE_KINDS": "partially_refunded"}
	for k, v := range b.env {
		env[k] = v
	}
	r = runCLI(t, env, "scan", "--once", "--rps", "0")
	if r.code != 0 || strings.Contains(r.stderr, "check off") {
		t.Fatalf("scan with columns: exit %d\n%s", r.code, r.stderr)
	}
	for kind, want := range map[string]int{"amount_mismatch": 1, "currency_mismatch": 1} {
		if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND resolved_at IS NULL", kind); n != want {
			t.Errorf("%d open %s findings, want %d", n, kind, want)
		}
	}
	// The ignored kind is neither judged nor healed: the finding from before stays as it was.
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'partially_refunded' AND resolved_at IS NULL"); n != 1 {
		t.Errorf("%d open partially_refunded findings, want the 1 from before", n)
	}
	r = runCLI(t, env, "status", "--json")
	var st struct {
		Columns struct{ Amount, Currency bool } `json:"money_columns"`
		Ignore  []string                        `json:"ignore_kinds"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Columns.Amount || !st.Columns.Currency ||
		len(st.Ignore) != 1 || st.Ignore[0] != "partially_refunded" {
		t.Errorf("status --json: %v %+v\n%s", err, st, r.stdout)
	}

	// findings recheck judges the money as the sweep does: the amount
	// fixed in the row heals its finding; the currency still wrong keeps
	// its finding open.
	pgtest.Exec(t, pool, "UPDATE payments SET amount = 1000 WHERE id = $1", ids[0])
	amount := pgtest.Count(t, pool, "SELECT id FROM reconciliation_findings WHERE kind = 'amount_mismatch'")
	currency := pgtest.Count(t, pool, "SELECT id FROM reconciliation_findings WHERE kind = 'currency_mismatch'")
	for _, id := range []int{amount, currency} {
		if r := runCLI(t, env, "findings", "recheck", fmt.Sprint(id)); r.code != 0 {
			t.Fatalf("findings recheck %d: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
		}
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NOT NULL", amount); n != 1 {
		t.Error("findings recheck left the amount_mismatch open after the row's amount was fixed")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", currency); n != 1 {
		t.Error("findings recheck closed the currency_mismatch while the drift stands")
	}
}

// run proves at start that the key may read the charges it expands (and
// the events it catches up on): a restricted key without Charges: Read
// exits 2 in one line naming the permission, before any row is swept.
func TestRunRefusesAKeyWithoutChargesRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}})
	b.sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionChargeRead}})
	r := runCLI(t, b.env, "run", "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; r.code != 2 || !strings.Contains(last, "Charges: Read") {
		t.Fatalf("run with a key without Charges: Read: exit %d, last line %q", r.code, last)
	}
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
		t.Errorf("%d rows verified by a run that should not have started", n)
	}
}
