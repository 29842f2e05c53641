package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// Issue 23, defect 1 (a), as reported: `scan --once --mode list --batch 2
// --rps 0.2` serves its second batch from the listing its first batch made;
// meanwhile a dispute is opened by `events --once`. The batch's answer is
// older than the finding: it must not heal it while Stripe says disputed.
func TestScanServedFromAnOlderListingDoesNotHealAFreshDispute(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	// Created a second apart: the second batch's window reaches a little
	// past the first's, so it waits for a token (5 s at 0.2/s) to list the
	// edge while its rows are served from the first listing.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	ps := make([]pgtest.Payment, 4)
	for i := range ps {
		id := fmt.Sprintf("pi_cli_%04d", i)
		at := old.Add(time.Duration(i) * time.Second)
		ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: at}
		b.sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: at, Amount: 1000, Currency: "usd"})
	}
	if _, err := pgtest.CopyPayments(context.Background(), pool, ps); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, b.env, "events", "--once", "--since", "1h"); r.code != 0 { // the cursor, before the dispute
		t.Fatalf("events: %d %s", r.code, r.stderr)
	}
	done := make(chan result, 1)
	go func() { done <- runCLI(t, b.env, "scan", "--once", "--mode", "list", "--batch", "2", "--rps", "0.2") }()
	testkit.WaitFor(t, "the first batch committed", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_cursor WHERE last_id > 0") > 0
	})
	if _, err := b.sim.Dispute("pi_cli_0002"); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, b.env, "events", "--once"); r.code != 0 {
		t.Fatalf("events: %d %s", r.code, r.stderr)
	}
	const open = "SELECT count(*) FROM reconciliation_findings WHERE kind = 'disputed' AND resolved_at IS NULL"
	if n := pgtest.Count(t, pool, open); n != 1 {
		t.Fatalf("%d open disputed findings after the catch-up, want 1", n)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("scan: %d %s", r.code, r.stderr)
	}
	if n := pgtest.Count(t, pool, open); n != 1 {
		t.Fatalf("%d open disputed findings after the scan, want 1: an answer listed before the dispute healed it", n)
	}
}
