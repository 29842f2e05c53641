package settlement_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/stripesim"
)

// benchLines is the size of the end-to-end benchmark (PAYRECON_BENCH_LINES
// overrides it).
func benchLines(b *testing.B) int {
	n := 100_000
	if v := os.Getenv("PAYRECON_BENCH_LINES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 100 {
			b.Fatalf("PAYRECON_BENCH_LINES=%q: want a number of lines, at least 100", v)
		}
	}
	return n
}

// BenchmarkPayoutsRound is the payouts check end to end on 100,000 lines:
// 1,000 automatic payouts of 100 lines each (99 charges and the payout's
// own line) listed, their lines read through stripe-go with their sources
// expanded, stored, matched to 99,000 local payments and judged, against
// the simulator over HTTP on this machine. It reports lines reconciled per
// second (target ≥ 5,000) and Stripe requests per line (target ≤ 0.0101).
// Each iteration starts from no payout read.
//
//	go test -run '^$' -bench PayoutsRound -benchtime 3x -timeout 30m ./settlement
func BenchmarkPayoutsRound(b *testing.B) {
	n := benchLines(b)
	const perPayout = 100
	payouts := n / perPayout
	charges := payouts * (perPayout - 1)
	bb := setup(b, stripesim.Faults{})
	ctx := context.Background()
	// Real time: the round's own measurements (Report.Judging) use its clock.
	bb.clock.Set(time.Now())
	base := time.Now().Add(-30 * day)
	id := func(i int) string { return fmt.Sprintf("pi_bench_%08d", i) }
	created := func(i int) time.Time { return base.Add(time.Duration(i) * 20 * time.Second) }
	if err := bb.sim.Seed(charges, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: id(i), Amount: 1000 + int64(i%500), Status: payrecon.IntentSucceeded, Created: created(i)}
	}); err != nil {
		b.Fatal(err)
	}
	rows := make([][]any, charges)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("order_%08d", i), id(i), string(payrecon.StatusPaid), created(i), created(i),
			1000 + int64(i%500), "usd", string(payrecon.IntentSucceeded)}
	}
	if _, err := bb.pool.CopyFrom(ctx, pgx.Identifier{"payments"}, []string{"order_id", "stripe_payment_intent_id", "status",
		"created_at", "updated_at", "amount", "currency", "observed_external_status"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	for p := range payouts {
		ids := make([]string, perPayout-1)
		for j := range ids {
			ids[j] = id(p*(perPayout-1) + j)
		}
		if _, err := bb.sim.CreatePayout(stripesim.PayoutSpec{Intents: ids, Created: created((p + 1) * (perPayout - 1)).Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
	rec := settlement.New(bb.gw, bb.store, settlement.Config{
		Checks: payrecon.SettlementChecks{Amount: true, Currency: true, SettleAfter: payrecon.DefaultSettleAfter}})
	for b.Loop() {
		b.StopTimer()
		pgtest.Exec(b, bb.pool, "TRUNCATE stripe_payout_lines, stripe_payouts")
		pgtest.Exec(b, bb.pool, "DELETE FROM reconciliation_findings")
		bb.sim.ResetStats()
		b.StartTimer()
		start := time.Now()
		rep, err := rec.RunOnce(ctx)
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Lines != n || len(rep.Opened) != 0 {
			b.Fatalf("round read %d lines (want %d), opened %v", rep.Lines, n, rep.Opened)
		}
		b.ReportMetric(float64(rep.Lines)/took.Seconds(), "lines/s")
		b.ReportMetric(rep.Judging.Seconds()*1000, "ms-judging")
		b.ReportMetric(rep.Writing.Seconds()*1000, "ms-writing")
		b.ReportMetric(float64(bb.sim.Stats().Total())/float64(rep.Lines), "requests/line")
	}
	// And a round with nothing new: the payouts listed, none read again.
	start := time.Now()
	rep, err := rec.RunOnce(ctx)
	if err != nil || rep.Read != 0 {
		b.Fatalf("%+v %v", rep, err)
	}
	b.ReportMetric(time.Since(start).Seconds()*1000, "ms/idle-round")
}
