package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// BenchmarkScanRepairModes runs the built binary's `scan --once` (list
// mode, no rate limit, against the simulator in this process) over the same
// table in each repair mode, and the previous release's binary (0.2.0, which
// has no repair modes) as the before: N rows (PAYRECON_BENCH_ROWS, default
// 20,000), one in twenty a lost payment_intent.succeeded, so that most
// batches queue repairs. Each run gets a fresh copy of the database; the
// rounds (PAYRECON_BENCH_ROUNDS, default 3) interleave the binaries, so a
// busy machine slows them alike. It reports rows/s and checks each run
// queued (apply), held (review) or skipped (off) what it should.
//
//	go test -run '^$' -bench ScanRepairModes -benchtime 1x -timeout 30m ./cmd/payrecon
func BenchmarkScanRepairModes(b *testing.B) {
	if testing.Short() {
		b.Skip("builds the previous release and sweeps tens of thousands of rows")
	}
	n, rounds := 20_000, 3
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_ROWS")); err == nil {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_ROUNDS")); err == nil {
		rounds = v
	}
	bin := binary(b)
	prev, err := buildRelease(previousRelease)
	if err != nil {
		b.Fatalf("the previous release: %v", err)
	}
	sim := simtest.Start(b, stripesim.Config{Seed: 1})
	base := time.Now().Add(-time.Duration(n+3600) * time.Second).Truncate(time.Second)
	id := func(i int) string { return fmt.Sprintf("pi_mode_%08d", i) }
	if err := sim.Seed(n, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: id(i), Status: payrecon.IntentSucceeded, Created: base.Add(time.Duration(i) * time.Second), Amount: 1000, Currency: "usd"}
	}); err != nil {
		b.Fatal(err)
	}
	drifts := n / 20
	seed := func(b *testing.B, url string) {
		pool := pgtestPoolB(b, url)
		ps := make([]pgtest.Payment, n)
		for i := range ps {
			st := payrecon.StatusPaid
			if i%20 == 0 {
				st = payrecon.StatusPending
			}
			at := base.Add(time.Duration(i) * time.Second)
			ps[i] = pgtest.Payment{IntentID: id(i), Status: st, CreatedAt: at, UpdatedAt: at}
		}
		pgtest.InsertPayments(b, pool, ps)
		pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
	}
	type variant struct {
		name string
		bin  string
		args []string
		// outbox and held are what the run must leave: commands queued,
		// and of those held for review.
		outbox, held int
	}
	variants := []variant{
		{"before=0.2.0", prev, nil, drifts, 0},
		{"mode=apply", bin, []string{"--repair-mode", "apply"}, drifts, 0},
		{"mode=review", bin, []string{"--repair-mode", "review"}, drifts, drifts},
		{"mode=off", bin, []string{"--repair-mode", "off"}, 0, 0},
	}
	results := map[string][]float64{}
	for b.Loop() {
		for round := range rounds {
			for _, v := range variants {
				url := pgtest.NewEmptyURL(b)
				mig := exec.Command(v.bin, "migrate")
				mig.Env = append(os.Environ(), "DATABASE_URL="+url)
				if out, err := mig.CombinedOutput(); err != nil {
					b.Fatalf("%s migrate: %v\n%s", v.name, err, out)
				}
				seed(b, url)
				args := append([]string{"scan", "--once", "--mode", "list", "--rps", "0", "--grace", "0", "--json"}, v.args...)
				cmd := exec.CommandContext(context.Background(), v.bin, args...)
				cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "STRIPE_SECRET_KEY="+sim.SecretKey(), "STRIPE_API_BASE="+sim.URL())
				start := time.Now()
				out, err := cmd.Output()
				took := time.Since(start)
				if err != nil {
					b.Fatalf("%s scan: %v\n%s", v.name, err, out)
				}
				var rep struct{ Scanned, Commands int }
				if err := json.Unmarshal(out, &rep); err != nil || rep.Scanned != n {
					b.Fatalf("%s scan report: %s (%v)", v.name, out, err)
				}
				pool := pgtestPoolB(b, url)
				queued := pgtest.Count(b, pool, "SELECT count(*) FROM outbox")
				held := 0
				if v.bin == bin {
					held = pgtest.Count(b, pool, "SELECT count(*) FROM outbox WHERE held_at IS NOT NULL")
				}
				if queued != v.outbox || held != v.held {
					b.Fatalf("%s: %d commands queued, %d held; want %d, %d", v.name, queued, held, v.outbox, v.held)
				}
				rate := float64(n) / took.Seconds()
				results[v.name] = append(results[v.name], rate)
				fmt.Fprintf(os.Stderr, "round %d %-13s %6.0f rows/s (%s, %d commands, %d held)\n", round+1, v.name, rate, took.Round(time.Millisecond), queued, held)
			}
		}
	}
	for _, v := range variants {
		rs := results[v.name]
		best, sum := 0.0, 0.0
		for _, r := range rs {
			best, sum = max(best, r), sum+r
		}
		b.ReportMetric(sum/float64(len(rs)), v.name+"-rows/s")
		fmt.Fprintf(os.Stderr, "%-13s mean %6.0f rows/s, best %6.0f over %d rounds\n", v.name, sum/float64(len(rs)), best, len(rs))
	}
}
