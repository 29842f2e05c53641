package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripesim"
)

// The connected accounts of the console's tests, beside the platform's
// own rows.
var connectAccounts = []string{"acct_1ConsoleA", "acct_1ConsoleB", "acct_1ConsoleC"}

// startPlatform runs the service on a platform: payments with the account
// column, for the platform and each connected account four rows in sync
// and, on acct_1ConsoleA only, two rows marked paid whose intents Stripe
// canceled (paid_locally_not_externally, left for review). It returns the
// admin URL once every account's job has completed a cycle.
func startPlatform(t *testing.T) (admin string) {
	t.Helper()
	db := pgtest.NewDB(t)
	sim := simtest.Start(t, stripesim.Config{})
	pgtest.Exec(t, db, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	old := time.Now().Add(-2 * time.Hour)
	for _, acct := range append([]string{""}, connectAccounts...) {
		var ps []pgtest.Payment
		for i := range 4 {
			id := fmt.Sprintf("pi_%s_ok_%d", strings.TrimPrefix(acct, "acct_"), i)
			ps = append(ps, pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old})
			sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Account: acct, Created: old, Amount: 1250, Currency: "usd"})
		}
		if acct == connectAccounts[0] {
			for i := range 2 {
				id := fmt.Sprintf("pi_ConsoleA_review_%d", i)
				ps = append(ps, pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old})
				sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentCanceled, Account: acct, Created: old, Amount: 1250, Currency: "usd"})
			}
		}
		got := pgtest.InsertPayments(t, db, ps)
		if acct != "" {
			pgtest.Exec(t, db, "UPDATE payments SET stripe_account_id = $1 WHERE id = ANY($2)", acct, got)
		}
	}
	ctx := context.Background()
	col, err := postgres.DetectAccountColumn(ctx, db, postgres.AccountColumnDefault)
	if err != nil || !col.Found {
		t.Fatalf("detect the account column: %+v, %v", col, err)
	}
	if _, err := postgres.EnsureAccountIndex(ctx, db, col); err != nil {
		t.Fatal(err)
	}
	cfg := serviceConfig(sim, "", &syncBuffer{})
	cfg.Accounts, cfg.PlatformRPS = col, -1
	cfg.MinCycles = map[string]time.Duration{connectAccounts[1]: 48 * time.Hour} // as --read-share would stretch it
	cfg.Events = catchup.Config{Interval: time.Second}
	svc, err := service.New(db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(sctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service stopped with %v", err)
		}
	})
	testkit.WaitFor(t, "every account's cycle and its events cursor", 90*time.Second, func() bool {
		return svc.AdminAddr() != "" &&
			pgtest.Count(t, db, "SELECT count(*) FROM reconciliation_cursor WHERE last_cycle_completed_at IS NOT NULL") == 1+len(connectAccounts) &&
			pgtest.Count(t, db, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL") == 2 &&
			pgtest.Count(t, db, "SELECT count(*) FROM stripe_events_cursor WHERE job LIKE 'events/acct_%'") == len(connectAccounts)
	})
	return "http://" + svc.AdminAddr()
}

// On a platform on Connect the overview shows the accounts (how many, how
// many behind, the worst by lag), the Accounts page lists each account's
// job, lag, last cycle and open findings, page by page, and an account's
// page shows its cycle, cursor, events catch-up and findings, each linked
// to its finding's page; the figures are status's.
func TestAccountsPages(t *testing.T) {
	t.Parallel()
	admin := startPlatform(t)

	r := get(t, admin+"/console/")
	if r.status != http.StatusOK || !strings.Contains(r.body, `<a href="/console/accounts">4</a>`) ||
		!strings.Contains(r.body, "0 behind") || !strings.Contains(r.body, "worst by lag <a href=\"/console/accounts/") ||
		!strings.Contains(r.body, `<a href="/console/accounts">Accounts</a>`) {
		t.Fatalf("overview %d:\n%s", r.status, r.body)
	}

	r = get(t, admin+"/console/accounts")
	if r.status != http.StatusOK {
		t.Fatalf("accounts page %d:\n%s", r.status, r.body)
	}
	for _, w := range []string{"4 accounts, 4 completed a cycle", ">0 behind</strong>", `<a href="/console/accounts/platform">platform</a>`,
		"payments-vs-stripe/acct_1ConsoleB", `<a href="/console/accounts/acct_1ConsoleA#findings-h">2</a>`} {
		if !strings.Contains(r.body, w) {
			t.Errorf("the accounts page lacks %q", w)
		}
	}
	if strings.Contains(r.body, "Next accounts") {
		t.Error("one page of accounts has a next page")
	}
	// Paging: account order, the platform's own first.
	r = get(t, admin+"/console/accounts?limit=2")
	if !strings.Contains(r.body, "/console/accounts/platform") || !strings.Contains(r.body, "/console/accounts/acct_1ConsoleA") ||
		strings.Contains(r.body, "/console/accounts/acct_1ConsoleB") || !strings.Contains(r.body, `href="/console/accounts?after=acct_1ConsoleA"`) {
		t.Errorf("the first page of two:\n%s", r.body)
	}
	r = get(t, admin+"/console/accounts?limit=2&after=acct_1ConsoleA")
	if strings.Contains(r.body, "/console/accounts/platform\"") || !strings.Contains(r.body, "/console/accounts/acct_1ConsoleB") ||
		!strings.Contains(r.body, "/console/accounts/acct_1ConsoleC") || strings.Contains(r.body, "Next accounts") {
		t.Errorf("the second page of two:\n%s", r.body)
	}
	r = get(t, admin+"/console/accounts?limit=2&after=platform")
	if !strings.Contains(r.body, "/console/accounts/acct_1ConsoleA") || !strings.Contains(r.body, "/console/accounts/acct_1ConsoleB") {
		t.Errorf("the page after the platform's own:\n%s", r.body)
	}

	r = get(t, admin+"/console/accounts/acct_1ConsoleA")
	if r.status != http.StatusOK {
		t.Fatalf("account page %d:\n%s", r.status, r.body)
	}
	for _, w := range []string{"Account <span class=\"mono\">acct_1ConsoleA</span>", "payments-vs-stripe/acct_1ConsoleA",
		"at the start of the account", "(6 rows)", "events/acct_1ConsoleA",
		"paid_locally_not_externally 2", "pi_ConsoleA_review_0", "pi_ConsoleA_review_1", `href="/console/findings/`,
		"findings list --account acct_1ConsoleA", "River batches",
		// 6 rows read in list mode every hour, against the 10,000 reads of
		// an account with fewer than 20 transactions.
		"reads / 30 days projected of 10", "(6 rows, 6 created in 30 days; a cycle every 1 h)"} {
		if !strings.Contains(r.body, w) {
			t.Errorf("the account page lacks %q", w)
		}
	}
	r = get(t, admin+"/console/accounts/acct_1ConsoleB")
	if r.status != http.StatusOK || !strings.Contains(r.body, "(4 rows, 4 created in 30 days; a cycle every 2 d, stretched by <code>--read-share</code>)") {
		t.Errorf("the stretched account's page %d:\n%s", r.status, r.body)
	}
	r = get(t, admin+"/console/accounts/platform")
	if r.status != http.StatusOK || !strings.Contains(r.body, "No open finding on this account") || strings.Contains(r.body, "Events cursor") ||
		!strings.Contains(r.body, "(4 rows)") {
		t.Errorf("the platform's own account page %d:\n%s", r.status, r.body)
	}
	// The findings list filtered by account, and its CSV: the account's
	// payments' findings only.
	r = get(t, admin+"/console/findings?account=acct_1ConsoleA")
	if r.status != http.StatusOK || !strings.Contains(r.body, "pi_ConsoleA_review_0") || !strings.Contains(r.body, "pi_ConsoleA_review_1") ||
		!strings.Contains(r.body, `name="account" value="acct_1ConsoleA"`) || !strings.Contains(r.body, "account=acct_1ConsoleA") {
		t.Errorf("findings of acct_1ConsoleA %d:\n%s", r.status, r.body)
	}
	for _, other := range []string{"acct_1ConsoleB", "platform"} {
		if r := get(t, admin+"/console/findings?account="+other); r.status != http.StatusOK || !strings.Contains(r.body, "No findings match") {
			t.Errorf("findings of %s %d:\n%s", other, r.status, r.body)
		}
	}
	csvA := get(t, admin+"/console/findings.csv?account=acct_1ConsoleA")
	csvB := get(t, admin+"/console/findings.csv?account=acct_1ConsoleB")
	if n, m := strings.Count(csvA.body, "\n"), strings.Count(csvB.body, "\n"); csvA.status != http.StatusOK || n != 3 || m != 1 {
		t.Errorf("CSV of acct_1ConsoleA %d: %d lines; of acct_1ConsoleB: %d lines", csvA.status, n, m)
	}

	for path, want := range map[string]int{
		"/console/findings?account=acct_":           http.StatusBadRequest,
		"/console/findings.csv?account=x":           http.StatusBadRequest,
		"/console/accounts/acct_1Nobody":            http.StatusNotFound,
		"/console/accounts/not-an-account":          http.StatusNotFound,
		"/console/accounts?after=drop%20table":      http.StatusBadRequest,
		"/console/accounts?limit=0":                 http.StatusBadRequest,
		"/console/accounts/acct_1ConsoleA%3Cscript": http.StatusNotFound,
	} {
		if r := get(t, admin+path); r.status != want {
			t.Errorf("GET %s = %d, want %d", path, r.status, want)
		}
	}
}
