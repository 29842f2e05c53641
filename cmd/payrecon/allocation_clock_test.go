package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
)

// runCLIAt is runCLI with the CLI's clock at clock.
func runCLIAt(t *testing.T, env map[string]string, clock payrecon.Clock, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := newApp(func(k string) string { return env[k] }, &out, &errb)
	a.clock = clock
	err := a.run(ctx, args)
	return result{stdout: out.String(), stderr: errb.String(), err: err, code: exitCode(err, &errb)}
}

// The read-allocation projection of `status` and `plan --from-db`, end to
// end on a settable clock: an account's transactions are its rows created
// in the 30 days before the clock (a row just inside counts, one just
// outside does not), its allocation 500 per transaction and at least
// 10,000, the platform's the sum over its accounts; --read-share stretches
// the cycle of an account whose reads would exceed it. Moving the clock
// on ages a busy account's rows out of the window: its allocation falls to
// the floor and its cycle stretches further.
func TestReadAllocationOnASettableClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if r := runCLI(t, b.env, "migrate"); r.code != 0 {
		t.Fatalf("migrate: %d %s", r.code, r.stderr)
	}
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	add := func(acct string, n int, created time.Time) {
		ps := make([]pgtest.Payment, n)
		for i := range ps {
			ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_%s_%d_%d", acct, created.Unix(), i), Status: payrecon.StatusPaid, CreatedAt: created}
		}
		ids, err := pgtest.CopyPayments(context.Background(), pool, ps)
		if err != nil {
			t.Fatal(err)
		}
		pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = $1 WHERE id = ANY($2)", acct, ids)
	}
	add("acct_busy", 100, t0.Add(-10*24*time.Hour))   // 100 transactions in the window at t0
	add("acct_quiet", 3000, t0.Add(-90*24*time.Hour)) // a large old table, nothing recent
	add("acct_edge", 1, t0.Add(-payrecon.AllocationWindow+time.Hour))
	add("acct_edge", 1, t0.Add(-payrecon.AllocationWindow-time.Hour))
	clock := testkit.NewClock(t0)

	type alloc struct {
		Account      string  `json:"account"`
		Rows         int64   `json:"rows"`
		Transactions int64   `json:"transactions_30d"`
		Allocation   int64   `json:"allocation"`
		Projected    float64 `json:"projected_reads_30d"`
		MinCycle     int64   `json:"min_cycle_ns"`
		Stretched    bool    `json:"stretched"`
	}
	var out struct {
		Allocation struct {
			Accounts []alloc `json:"accounts"`
			Platform *alloc  `json:"platform"`
		} `json:"read_allocation"`
	}
	byAccount := func() map[string]alloc {
		m := map[string]alloc{}
		for _, x := range out.Allocation.Accounts {
			m[x.Account] = x
		}
		if out.Allocation.Platform != nil {
			m["(platform)"] = *out.Allocation.Platform
		}
		return m
	}
	status := func() map[string]alloc {
		t.Helper()
		r := runCLIAt(t, b.env, clock, "status", "--json", "--mode", "retrieve", "--min-cycle", "1h", "--read-share", "0.5")
		if r.code != 0 {
			t.Fatalf("status: %d %s", r.code, r.stderr)
		}
		out.Allocation.Accounts, out.Allocation.Platform = nil, nil
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		return byAccount()
	}
	day := float64(24 * time.Hour)
	check := func(when string, m map[string]alloc, acct string, rows, tx, allocation int64) {
		t.Helper()
		x, ok := m[acct]
		if !ok {
			t.Fatalf("%s: no allocation for %s in %+v", when, acct, m)
		}
		if x.Rows != rows || x.Transactions != tx || x.Allocation != allocation {
			t.Errorf("%s: %s has %d rows, %d transactions, allocation %d; want %d, %d, %d", when, acct, x.Rows, x.Transactions, x.Allocation, rows, tx, allocation)
		}
		// Retrieve mode, hourly: rows × 720 reads in 30 days, unless that
		// is over half the allocation: then the cycle is rows / (half the
		// allocation) × 30 days, and the reads half the allocation.
		perCycle := float64(rows)
		want := perCycle * 720
		if want > 0.5*float64(allocation) {
			minCycle := perCycle / (0.5 * float64(allocation)) * 30 * day
			if !x.Stretched || absDiff(float64(x.MinCycle), minCycle) > float64(time.Second) {
				t.Errorf("%s: %s stretched %v to %s, want to %s", when, acct, x.Stretched, time.Duration(x.MinCycle), time.Duration(minCycle))
			}
			want = 0.5 * float64(allocation)
		} else if x.Stretched {
			t.Errorf("%s: %s stretched, want not", when, acct)
		}
		if absDiff(x.Projected, want) > 1 {
			t.Errorf("%s: %s projects %.0f reads in 30 days, want %.0f", when, acct, x.Projected, want)
		}
	}

	m := status()
	check("t0", m, "acct_busy", 100, 100, 50_000)
	check("t0", m, "acct_quiet", 3000, 0, 10_000)
	check("t0", m, "acct_edge", 2, 1, 10_000)
	check("t0", m, "(platform)", 3102, 101, 50_500)

	// 25 days on: acct_busy's rows are 35 days old, acct_edge's newer one
	// 30 days and 23 hours.
	clock.Advance(25 * 24 * time.Hour)
	m = status()
	check("t0+25d", m, "acct_busy", 100, 0, 10_000)
	check("t0+25d", m, "acct_edge", 2, 0, 10_000)
	check("t0+25d", m, "(platform)", 3102, 0, 10_000)

	// plan --from-db takes the same transactions, on the same clock.
	clock.Set(t0)
	r := runCLIAt(t, b.env, clock, "plan", "--from-db", "--rps", "10", "--json")
	if r.code != 0 {
		t.Fatalf("plan: %d %s", r.code, r.stderr)
	}
	out.Allocation.Accounts, out.Allocation.Platform = nil, nil
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	m = byAccount()
	for acct, want := range map[string][2]int64{"acct_busy": {100, 50_000}, "acct_quiet": {0, 10_000}, "acct_edge": {1, 10_000}, "(platform)": {101, 50_500}} {
		if x := m[acct]; x.Transactions != want[0] || x.Allocation != want[1] {
			t.Errorf("plan at t0: %s has %d transactions, allocation %d; want %d, %d", acct, x.Transactions, x.Allocation, want[0], want[1])
		}
	}
}

func absDiff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}
