package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// seedAccounts gives payments the account column and n rows per account,
// every third missed_success, with their intents on their accounts.
func (b *cliBundle) seedAccounts(t *testing.T, rows map[string]int) {
	t.Helper()
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN IF NOT EXISTS stripe_account_id text")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for acct, n := range rows {
		ps := make([]pgtest.Payment, n)
		for i := range ps {
			id := fmt.Sprintf("pi_%s_%04d", acct, i)
			st := payrecon.IntentRequiresPaymentMethod
			if i%3 == 0 {
				st = payrecon.IntentSucceeded
			}
			at := old.Add(time.Duration(i) * time.Second)
			ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPending, CreatedAt: at}
			b.sim.Put(stripesim.Intent{ID: id, Status: st, Account: acct, Created: at})
		}
		ids, err := pgtest.CopyPayments(context.Background(), pool, ps)
		if err != nil {
			t.Fatal(err)
		}
		if acct != "" {
			pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = $1 WHERE id = ANY($2)", acct, ids)
		}
	}
}

// scan --once on a platform sweeps every account's job until it wraps,
// each read with its own Stripe-Account; --account sweeps one.
func TestScanOnceSweepsEveryAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := map[string]int{"": 4, "acct_A": 7, "acct_B": 3}
	b.seedAccounts(t, rows)
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	var rep accountsReport
	mustJSON(t, runCLI(t, b.env, "scan", "--once", "--rps", "0", "--json"), &rep)
	if len(rep.Accounts) != 3 || rep.Total.Scanned != 14 || rep.Total.NewFindings != 2+3+1 {
		t.Fatalf("report %+v", rep.Total)
	}
	if n := b.sim.Stats().WrongAccount; n != 0 {
		t.Fatalf("%d wrong-account reads", n)
	}
	pool := pgtestPool(t, b.url)
	for acct := range rows {
		job := payrecon.AccountJob("payments-vs-stripe", acct)
		if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_cursor WHERE job = $1 AND last_cycle_completed_at IS NOT NULL", job); n != 1 {
			t.Errorf("job %s did not complete a cycle", job)
		}
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM pg_indexes WHERE indexname = 'payments_account_id'"); n != 1 {
		t.Errorf("migrate did not build the account index")
	}
	mustJSON(t, runCLI(t, b.env, "scan", "--once", "--rps", "0", "--account", "acct_B", "--json"), &rep)
	if len(rep.Accounts) != 1 || rep.Accounts[0].Job != "payments-vs-stripe/acct_B" || rep.Total.Scanned != 3 {
		t.Fatalf("--account acct_B: %+v", rep)
	}
	if r := runCLI(t, b.env, "scan", "--once", "--account", "cus_x"); r.code != 2 {
		t.Fatalf("--account cus_x: exit %d, want 2", r.code)
	}

	// status summarises the accounts; --account shows one.
	var st struct {
		Accounts *struct {
			Accounts, Completed, Behind int
		} `json:"accounts"`
		Jobs []struct {
			Job string `json:"job"`
		} `json:"jobs"`
	}
	mustJSON(t, runCLI(t, b.env, "status", "--json"), &st)
	if st.Accounts == nil || st.Accounts.Accounts != 3 || st.Accounts.Completed != 3 || st.Accounts.Behind != 0 {
		t.Fatalf("status accounts = %+v", st.Accounts)
	}
	for _, j := range st.Jobs {
		if strings.Contains(j.Job, "/acct_") {
			t.Errorf("status lists account job %s one by one", j.Job)
		}
	}
	mustJSON(t, runCLI(t, b.env, "status", "--json", "--account", "acct_A"), &st)
	if len(st.Jobs) != 1 || st.Jobs[0].Job != "payments-vs-stripe/acct_A" {
		t.Fatalf("status --account acct_A jobs = %+v", st.Jobs)
	}
	var al struct {
		Allocation struct {
			Accounts []struct {
				Account    string `json:"account"`
				Allocation int64  `json:"allocation"`
			} `json:"accounts"`
			Platform *struct {
				Rows       int64 `json:"rows"`
				Allocation int64 `json:"allocation"`
			} `json:"platform"`
		} `json:"read_allocation"`
	}
	mustJSON(t, runCLI(t, b.env, "status", "--json"), &al)
	if al.Allocation.Platform == nil || al.Allocation.Platform.Rows != 14 || al.Allocation.Platform.Allocation != 10000 || len(al.Allocation.Accounts) != 3 {
		t.Fatalf("read allocation %+v", al.Allocation)
	}
	if r := runCLI(t, b.env, "status"); r.code != 0 || !strings.Contains(r.stdout, "accounts") || !strings.Contains(r.stdout, "3 swept as their own jobs") ||
		!strings.Contains(r.stdout, "read allocation") {
		t.Fatalf("status text:\n%s%s", r.stdout, r.stderr)
	}
	// findings list --account: only that account's payments' findings.
	var fs []struct {
		IntentID string `json:"stripe_payment_intent_id"`
	}
	mustJSON(t, runCLI(t, b.env, "findings", "list", "--account", "acct_A", "--json"), &fs)
	if len(fs) != 3 {
		t.Fatalf("findings list --account acct_A: %d findings, want 3", len(fs))
	}
	for _, f := range fs {
		if !strings.HasPrefix(f.IntentID, "pi_acct_A_") {
			t.Errorf("finding of %s listed for acct_A", f.IntentID)
		}
	}
	mustJSON(t, runCLI(t, b.env, "findings", "list", "--account", "platform", "--json"), &fs)
	if len(fs) != 2 {
		t.Fatalf("findings list --account platform: %d findings, want 2", len(fs))
	}
}

// findings recheck of a connected account's row reads it as that account:
// never as the platform (which Stripe would answer 404).
func TestFindingsRecheckReadsAsTheRowsAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedAccounts(t, map[string]int{"acct_A": 2})
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0"); r.code != 0 {
		t.Fatalf("scan: %d %s", r.code, r.stderr)
	}
	pool := pgtestPool(t, b.url)
	var id int64
	if err := pool.QueryRow(context.Background(), "SELECT id FROM reconciliation_findings WHERE kind = 'missed_success'").Scan(&id); err != nil {
		t.Fatal(err)
	}
	before := b.sim.Stats().WrongAccount
	r := runCLI(t, b.env, "findings", "recheck", fmt.Sprint(id))
	if r.code != 0 {
		t.Fatalf("recheck: %d %s", r.code, r.stderr)
	}
	if n := b.sim.Stats().WrongAccount - before; n != 0 {
		t.Fatalf("findings recheck read acct_A's row under another account (%d wrong-account reads):\n%s", n, r.stdout)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_externally'"); n != 0 {
		t.Fatalf("the recheck saw the row as missing in Stripe")
	}
}

// Three `payrecon run` replicas over one database and twelve accounts: one
// is SIGKILLed mid-cycle; every account still completes its cycle on the
// others, every row is verified, each drift is recorded once, and no
// request ever reads a row as another account.
func TestRunReplicasShareAccountsAndSurviveAKill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := map[string]int{}
	for i := range 12 {
		rows[fmt.Sprintf("acct_%02d", i)] = 30
	}
	rows[""] = 30
	b.seedAccounts(t, rows)
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	b.sim.SetFaults(stripesim.Faults{Latency: 5 * time.Millisecond})
	pool := pgtestPool(t, b.url)
	args := []string{"run", "--grace", "0", "--min-cycle", "1h", "--batch", "5", "--rps", "0", "--platform-rps", "0",
		"--events-interval", "0", "--log-format", "json", "--workers", "2", "--repair-rescue-after", "3s"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...))
	}
	testkit.WaitFor(t, "a few batches", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL") >= 60
	})
	if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cycled := func() int {
		return pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_cursor WHERE job LIKE 'payments-vs-stripe%' AND last_cycle_completed_at IS NOT NULL")
	}
	testkit.WaitFor(t, "every account's cycle after the kill", 120*time.Second, func() bool { return cycled() == 13 })
	if n := b.sim.Stats().WrongAccount; n != 0 {
		t.Fatalf("%d requests read a row as the wrong account", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); n != 0 {
		t.Errorf("%d rows never verified", n)
	}
	// 10 of every account's 30 rows are missed_success: once each.
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success'"); n != 13*10 {
		t.Errorf("%d missed_success findings, want %d (each drift once)", n, 13*10)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_externally'"); n != 0 {
		t.Errorf("%d rows seen as missing in Stripe: read under the wrong account", n)
	}
	var replicas int
	for _, p := range procs[1:] {
		if strings.Contains(p.stderr.String(), "account cycle complete") {
			replicas++
		}
	}
	if replicas != 2 {
		t.Errorf("%d of the 2 surviving replicas completed account cycles: the work was not spread", replicas)
	}
}

// events --once on a platform checks every event against its row's
// account, as the webhook and run's catch-up do: the platform's own event
// for a row that records a connected account is never applied and opens
// account_mismatch. (events once skipped the check: it never set the
// account column.)
func TestEventsOnceChecksTheRowsAccount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seedAccounts(t, map[string]int{"acct_A": 2})
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	// The same intent id, answered on the platform's account: its event is
	// in the platform's own list, not acct_A's.
	const id = "pi_acct_A_0001"
	b.sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentRequiresPaymentMethod, Created: time.Now().Add(-time.Hour)})
	if _, err := b.sim.SetStatus(id, payrecon.IntentSucceeded); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, b.env, "events", "--once", "--since", "1h", "--json")
	if r.code != 0 {
		t.Fatalf("events exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE stripe_payment_intent_id = $1 AND status = 'pending' AND version = 0", id); n != 1 {
		t.Fatalf("the row of acct_A changed by the platform's event (%d rows pending at version 0)\n%s", n, r.stdout)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'account_mismatch' AND resolved_at IS NULL"); n != 1 {
		t.Fatalf("%d open account_mismatch findings, want 1\n%s", n, r.stdout)
	}
}
