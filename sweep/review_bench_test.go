package sweep_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

// BenchmarkSweepRepairModes is the sweep's database cost in each repair
// mode, the Stripe side instant (an in-memory gateway): N rows
// (PAYRECON_BENCH_ROWS, default 50,000), one in twenty a lost
// payment_intent.succeeded, so every batch of 200 queues 10 repairs:
// apply inserts their River jobs, review marks them held and inserts the
// jobs pending, off queues none. Each run sweeps a fresh database; the
// rounds (PAYRECON_BENCH_ROUNDS, default 3) interleave the modes. Besides
// rows/s (which a busy machine blurs), a tracer on the pool counts the
// round trips to PostgreSQL and the time spent in them: exact counts,
// whatever else the machine runs.
//
//	go test -run '^$' -bench SweepRepairModes -benchtime 1x ./sweep
func BenchmarkSweepRepairModes(b *testing.B) {
	n, rounds := 50_000, 3
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_ROWS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_ROUNDS")); err == nil {
		rounds = v
	}
	gw := newFakeGateway()
	old := time.Now().Add(-time.Hour)
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		id := fmt.Sprintf("pi_%07d", i)
		ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old, UpdatedAt: old}
		if i%20 == 0 {
			ps[i].Status = payrecon.StatusPending
		}
		gw.set(id, payrecon.IntentSucceeded)
	}
	modes := []payrecon.RepairMode{payrecon.RepairApply, payrecon.RepairReview, payrecon.RepairOff}
	rates := map[payrecon.RepairMode][]float64{}
	for b.Loop() {
		for round := range rounds {
			for _, mode := range modes {
				tr := &countingTracer{}
				pool := tracedDB(b, tr)
				pgtest.InsertPayments(b, pool, ps)
				pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
				rl, err := relay.New(pool, postgres.NewWriter(nil), relay.Config{InsertOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				store := postgres.NewStore(pool)
				store.EnqueueFunc, store.HoldFunc, store.RepairMode = rl.EnqueueFunc(), rl.HoldFunc(), mode
				s := mustNew(store, gw, sweep.Config{Job: "bench", Batch: 200, Concurrency: 8, Mode: sweep.ModeRetrieve, Grace: sweep.Off})
				tr.reset()
				start := time.Now()
				rep, err := s.RunCycle(context.Background(), nil)
				took := time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				want := n / 20
				if !mode.Queues() {
					want = 0
				}
				held := pgtest.Count(b, pool, "SELECT count(*) FROM outbox WHERE held_at IS NOT NULL")
				if rep.Commands != want || (mode.Holds() && held != want) || (!mode.Holds() && held != 0) {
					b.Fatalf("%s: %d commands, %d held; want %d", mode, rep.Commands, held, want)
				}
				r := float64(rep.Verified) / took.Seconds()
				rates[mode] = append(rates[mode], r)
				trips, inDB := tr.read()
				fmt.Fprintf(os.Stderr, "round %d mode=%-6s %6.0f rows/s (%s, %d commands, %d held); %d round trips (%.2f per batch), %s in them\n",
					round+1, mode, r, took.Round(time.Millisecond), rep.Commands, held, trips, float64(trips)/float64(rep.Batches), inDB.Round(time.Millisecond))
				pool.Close()
			}
		}
	}
	for _, mode := range modes {
		sum := 0.0
		for _, r := range rates[mode] {
			sum += r
		}
		b.ReportMetric(sum/float64(len(rates[mode])), "mode="+string(mode)+"-rows/s")
	}
}
