package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

// `demo --accounts`: every account, the platform's own among them, gets
// rows and drift, orphans too are spread, the accounts' ids are valid and
// the same for the same seed, and the settlement drifts are the
// platform's own rows' (its payouts are the only ones paid out).
func TestPlanSpreadsDriftOverEveryAccount(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct{ n, k int }{{400, 3}, {400, MaxAccounts(400)}, {10000, 50}} {
		p, err := newPlan(c.n, 7, now, SpanDefault)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.spread(c.k, 7); err != nil {
			t.Fatal(err)
		}
		if len(p.accounts) != c.k+1 || p.accounts[0] != "" {
			t.Fatalf("n=%d k=%d: accounts %v", c.n, c.k, p.accounts)
		}
		seen := map[string]bool{}
		for _, a := range p.accounts[1:] {
			if !payrecon.ValidAccountID(a) || seen[a] {
				t.Errorf("account %q invalid or repeated", a)
			}
			seen[a] = true
		}
		rows, drift, wrong := make([]int, c.k+1), make([]int, c.k+1), make([]int, c.k+1)
		for i, r := range p.rows {
			rows[r.account]++
			if r.role == roleWrongAccount {
				wrong[r.account]++
			}
			if r.kind() != "" {
				drift[r.account]++
			}
			if r.account != 0 && p.settlementKind(i) != "" {
				t.Errorf("row %d of account %s has a settlement drift", i, p.accountOf(i))
			}
		}
		for a := range p.accounts {
			if rows[a] < c.n/(c.k+1)-int(numRoles) || drift[a] == 0 || wrong[a] != 1 { // each role leaves at most one row over
				t.Errorf("n=%d k=%d: account %d has %d rows, %d with drift, %d webhooks from another account", c.n, c.k, a, rows[a], drift[a], wrong[a])
			}
		}
		for _, k := range []payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindSettledAmountMismatch, payrecon.KindPaidNotSettled} {
			if p.injected()[k] == 0 {
				t.Errorf("n=%d k=%d: no %s among the platform's rows", c.n, c.k, k)
			}
		}
		q, _ := newPlan(c.n, 7, now, SpanDefault)
		_ = q.spread(c.k, 7)
		for i := range p.rows {
			if p.rows[i] != q.rows[i] {
				t.Fatalf("row %d differs for the same seed", i)
			}
		}
	}
	p, _ := newPlan(400, 7, now, SpanDefault)
	if err := p.spread(MaxAccounts(400)+1, 7); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("too many accounts: %v", err)
	}
	if err := (Config{Payments: 400, Accounts: MaxAccounts(400) + 1}).Validate(); err == nil {
		t.Error("Validate accepts more accounts than the drift can cover")
	}
}

// The report fails on a request made under the wrong account, and on an
// account whose job completed no cycle.
func TestPlatformReportProblems(t *testing.T) {
	t.Parallel()
	ok := &PlatformReport{Accounts: []AccountReport{{Account: "", Completed: true, Injected: 3}, {Account: "acct_1", Completed: true, Injected: 2}}}
	if p := ok.problems(); len(p) != 0 {
		t.Errorf("problems %v", p)
	}
	bad := &PlatformReport{WrongAccountRequests: 2, Accounts: []AccountReport{{Account: "acct_1", Job: "j/acct_1", Injected: 2}}}
	got := strings.Join(bad.problems(), "; ")
	if !strings.Contains(got, "2 requests made under the wrong Stripe-Account") || !strings.Contains(got, "acct_1: its sweep job j/acct_1 completed no cycle") {
		t.Errorf("problems %q", got)
	}
	if (*PlatformReport)(nil).problems() != nil {
		t.Error("a demo without --accounts has platform problems")
	}
}
