package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// payouts --once reads and judges; list, show and export print what it
// read; the export is byte for byte the console's CSV of the same dates.
func TestPayoutsCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}, {"paid", "succeeded"}, {"pending", "succeeded"}})
	if _, err := b.sim.Refund("pi_cli_0001", 200); err != nil {
		t.Fatal(err)
	}
	po, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: "po_cli", Intents: []string{"pi_cli_0000", "pi_cli_0001", "pi_cli_0002"}, Fees: []int64{15}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.sim.CreatePayout(stripesim.PayoutSpec{ID: "po_cli_manual", Manual: true, Amount: 777}); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, b.env, "payouts", "--once", "--json")
	if r.code != 0 {
		t.Fatalf("payouts --once: %d %s%s", r.code, r.stderr, r.stdout)
	}
	var rep struct {
		Payouts  int            `json:"payouts"`
		Read     int            `json:"payouts_read"`
		Lines    int            `json:"lines"`
		Requests int            `json:"stripe_requests"`
		Opened   map[string]int `json:"opened"`
		Flagged  []any          `json:"flagged_payouts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	// 3 charges, a refund, a fee and its own line, in 2 requests.
	if rep.Payouts != 2 || rep.Read != 1 || rep.Lines != 6 || rep.Requests != 2 || rep.Opened["settled_not_paid_locally"] != 1 || len(rep.Flagged) != 0 {
		t.Errorf("report %+v", rep)
	}
	// The finding says what was settled.
	pool0 := pgtestPool(t, b.url)
	var fid int64
	if err := pool0.QueryRow(context.Background(), "SELECT id FROM reconciliation_findings WHERE kind = 'settled_not_paid_locally'").Scan(&fid); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, b.env, "findings", "show", fmt.Sprint(fid)); r.code != 0 || !strings.Contains(r.stdout, "payout po_cli") || !strings.Contains(r.stdout, "gross") {
		t.Errorf("findings show: %d %s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, b.env, "payouts", "--once")
	if r.code != 0 || !strings.Contains(r.stdout, "already read in full") || !strings.Contains(r.stdout, payrecon.ManualPayoutNote) {
		t.Errorf("second payouts --once: %d %s%s", r.code, r.stderr, r.stdout)
	}
	r = runCLI(t, b.env, "payouts", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "po_cli ") || !strings.Contains(r.stdout, "ok: lines add up") || !strings.Contains(r.stdout, "cannot itemise") {
		t.Errorf("payouts list: %d %s%s", r.code, r.stderr, r.stdout)
	}
	r = runCLI(t, b.env, "payouts", "show", "po_cli")
	for _, want := range []string{"gross", "refunds", "-200 USD", "fees", "net", "the payout itself", "order_", "matched"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("payouts show lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	if r := runCLI(t, b.env, "payouts", "show", "po_nope"); r.code != 2 || !strings.Contains(r.stderr, "not read yet") {
		t.Errorf("show an unknown payout: %d %s", r.code, r.stderr)
	}
	from, to := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	out := filepath.Join(t.TempDir(), "lines.csv")
	if r := runCLI(t, b.env, "payouts", "export", "--from", from, "--to", to, "--output", out); r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	stdout := runCLI(t, b.env, "payouts", "export", "--from", from, "--to", to, "--account", "platform")
	if stdout.code != 0 || stdout.stdout != string(file) || strings.Count(string(file), "\n") != 1+6 {
		t.Errorf("export to stdout %d:\n%s\nto a file:\n%s", stdout.code, stdout.stdout, file)
	}
	if r := runCLI(t, b.env, "payouts", "export", "--from", from, "--to", to, "--account", "acct_other"); r.code != 0 || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("another account's export: %d %q", r.code, r.stdout)
	}

	// The console's CSV of the same dates is the same file.
	pool := pgtestPool(t, b.url)
	svc, err := service.New(pool, service.Config{HTTPAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
		Sweep:   sweep.Config{MinCycle: time.Hour},
		Stripe:  stripeapi.Config{SecretKey: b.sim.SecretKey(), APIBase: b.sim.URL()},
		Payouts: service.PayoutsConfig{Interval: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	testkit.WaitFor(t, "the console", 30*time.Second, func() bool { return svc.AdminAddr() != "" })
	code, body := httpGet("http://" + svc.AdminAddr() + "/console/payouts.csv?from=" + from + "&to=" + to)
	if code != 200 || body != string(file) {
		t.Errorf("console CSV %d:\n%s\nCLI export:\n%s", code, body, file)
	}
	if !strings.Contains(string(file), po.ID) {
		t.Errorf("the export lacks %s", po.ID)
	}
}

// Bad input to the payouts commands is one line and exit 2, and leaves no
// file behind.
func TestPayoutsUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"payouts", "export", "--from", "2026-13-01", "--to", "2026-01-02"},
		{"payouts", "export", "--from", "2026-02-01", "--to", "2026-01-02"},
		{"payouts", "export", "--from", "2026-01-01", "--to", "2026-01-02", "--account", "bob"},
		{"payouts", "export", "--from", "2026-01-01", "--to", "2026-01-02", "--output", filepath.Join(dir, "missing", "x.csv")},
		{"payouts", "show", "ch_123"},
		{"payouts", "--once", "--since", "0"},
		{"payouts", "--once", "--settle-after", "-1d"},
		{"payouts", "--once", "--ignore-kinds", "settled_not_paid"},
		{"payouts", "list", "--limit", "0"},
	} {
		r := runCLI(t, b.env, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files left behind: %v", entries)
	}
}

// run with a key that may not read balance transactions turns the payouts
// check off in one log line, and the rest runs: the sweep repairs a lost
// payment_intent.succeeded.
func TestRunWithoutBalanceRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"pending", "succeeded"}})
	b.sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionBalanceRead}})
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--grace", "0", "--min-cycle", "1h",
			"--workers", "2", "--events-interval", "0"}, func(k string) string { return b.env[k] }, &out, &errb)
	}()
	pool := pgtestPool(t, b.url)
	testkit.WaitFor(t, "the repair", 60*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned: %v\n%s", err, errb.String())
		default:
		}
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid'", ids[0]) == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	logs := errb.String()
	if n := strings.Count(logs, "payouts check off"); n != 1 || !strings.Contains(logs, "Balance: Read") {
		t.Errorf("%d lines saying the payouts check is off:\n%s", n, logs)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind LIKE 'payrecon_payout%'"); n != 0 {
		t.Errorf("%d payouts jobs with the check off", n)
	}
}
