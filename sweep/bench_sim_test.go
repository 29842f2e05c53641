package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// Benchmarks through the real gateway and the simulator over loopback HTTP.
// Each iteration sweeps one full cycle on a fresh job.

type simBench struct {
	pool *postgres.Store
	sim  *stripesim.Server
	gw   *stripeapi.Gateway
	rows int
}

// newSimBench seeds n paid rows created one per second in time order, with
// the same intents in the simulator.
func newSimBench(b *testing.B, n int, faults stripesim.Faults) *simBench {
	b.Helper()
	pool := pgtest.NewDB(b)
	sim := simtest.Start(b, stripesim.Config{Seed: 1})
	base := time.Now().Add(-time.Duration(n+3600) * time.Second).Truncate(time.Second)
	id := func(i int) string { return fmt.Sprintf("pi_bench_%08d", i) }
	if err := sim.Seed(n, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: id(i), Status: payrecon.IntentSucceeded, Created: base.Add(time.Duration(i) * time.Second)}
	}); err != nil {
		b.Fatal(err)
	}
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: id(i), Status: payrecon.StatusPaid, CreatedAt: base.Add(time.Duration(i) * time.Second)}
	}
	for i := 0; i < n; i += 100_000 {
		pgtest.InsertPayments(b, pool, ps[i:min(i+100_000, n)])
	}
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL()})
	if err != nil {
		b.Fatal(err)
	}
	sim.SetFaults(faults)
	return &simBench{pool: postgres.NewStore(pool), sim: sim, gw: gw, rows: n}
}

func (sb *simBench) cycle(b *testing.B, i int, cfg sweep.Config, rps float64) (sweep.CycleReport, time.Duration) {
	b.Helper()
	cfg.Job = fmt.Sprintf("bench-%d", i)
	cfg.Limiter = budget.NewLimiter(rps)
	s := mustNew(sb.pool, sb.gw, cfg)
	start := time.Now()
	rep, err := s.RunCycle(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	if rep.Verified != sb.rows {
		b.Fatalf("verified %d of %d rows", rep.Verified, sb.rows)
	}
	return rep, time.Since(start)
}

// BenchmarkLatencyBound: 50 ms per Stripe call, a budget of 100 requests/s,
// retrieve mode: verified rows per second as a share of the budget. The
// seed's one-at-a-time loop reaches 19 %.
//
//	go test -run '^$' -bench LatencyBound -benchtime 1x ./sweep
func BenchmarkLatencyBound(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 20 s")
	}
	sb := newSimBench(b, 2000, stripesim.Faults{Latency: 50 * time.Millisecond})
	for i := 0; b.Loop(); i++ {
		rep, took := sb.cycle(b, i, sweep.Config{Batch: 200, Concurrency: 16, Mode: sweep.ModeRetrieve}, 100)
		rate := float64(rep.Verified) / took.Seconds()
		b.ReportMetric(rate, "rows/s")
		b.ReportMetric(100*rate/100, "%budget")
	}
}

// BenchmarkListMode: 100 k rows created in time order, list mode, a budget
// of 25 requests/s (Stripe's sandbox and per-endpoint limit): Stripe
// requests per verified row, and rows per second. Retrieve mode at the same
// budget verifies at most 25 rows/s (one request per row).
//
//	go test -run '^$' -bench ListMode -benchtime 1x ./sweep
func BenchmarkListMode(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute")
	}
	sb := newSimBench(b, 100_000, stripesim.Faults{})
	for i := 0; b.Loop(); i++ {
		sb.sim.ResetStats()
		rep, took := sb.cycle(b, i, sweep.Config{Batch: 200, Concurrency: 8, Mode: sweep.ModeList}, 25)
		reqs := sb.sim.Stats().Total()
		b.ReportMetric(float64(reqs)/float64(rep.Verified), "requests/row")
		b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(rep.Verified)/took.Seconds()/25, "x-retrieve")
	}
}

// BenchmarkRetrieveAtBudget confirms retrieve mode's ceiling at 25
// requests/s: about 25 rows/s, whatever the concurrency.
//
//	go test -run '^$' -bench RetrieveAtBudget -benchtime 1x ./sweep
func BenchmarkRetrieveAtBudget(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 20 s")
	}
	sb := newSimBench(b, 500, stripesim.Faults{})
	for i := 0; b.Loop(); i++ {
		rep, took := sb.cycle(b, i, sweep.Config{Batch: 200, Concurrency: 8, Mode: sweep.ModeRetrieve}, 25)
		b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
	}
}

// BenchmarkEndToEnd: 100 k rows through the real gateway and the simulator
// over loopback HTTP, no added latency and no rate limit: the whole
// pipeline's ceiling on this machine, in each mode. (The seed's Python
// sketch: about 1,700 rows/s in the same setting.)
//
//	go test -run '^$' -bench EndToEnd -benchtime 1x ./sweep
func BenchmarkEndToEnd(b *testing.B) {
	if testing.Short() {
		b.Skip("takes 20 s")
	}
	sb := newSimBench(b, 100_000, stripesim.Faults{})
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		b.Run(string(mode), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				rep, took := sb.cycle(b, i+100*len(mode), sweep.Config{Batch: 200, Concurrency: 16, Mode: mode}, 0)
				b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
			}
		})
	}
}

// BenchmarkMoney: the end-to-end sweep of BenchmarkEndToEnd with the money
// checks off (no local columns read, every money kind ignored) and on (the
// amount and currency columns read with every row, every rule judged,
// details written), in each mode; and Stripe requests per verified row,
// which the money checks must not change (the charge comes in the same
// answer).
//
//	go test -run '^$' -bench Money -benchtime 1x -count 3 ./sweep
func BenchmarkMoney(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute")
	}
	sb := newSimBench(b, 100_000, stripesim.Faults{})
	pgtest.Exec(b, sb.pool.Pool(), "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	pgtest.Exec(b, sb.pool.Pool(), "UPDATE payments SET amount = 1000, currency = 'usd'")
	pgtest.Exec(b, sb.pool.Pool(), "VACUUM ANALYZE payments")
	cols, err := postgres.DetectMoneyColumns(context.Background(), sb.pool.Pool(), "amount", "currency")
	if err != nil || !cols.Amount || !cols.Currency {
		b.Fatalf("money columns: %+v %v", cols, err)
	}
	off := map[payrecon.Kind]bool{}
	for _, k := range payrecon.MoneyKinds {
		off[k] = true
	}
	plain, withMoney := sb.pool, sb.pool.WithMoneyColumns(cols)
	n := 0
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		for _, money := range []string{"off", "on"} {
			b.Run(string(mode)+"/"+money, func(b *testing.B) {
				cfg := sweep.Config{Batch: 200, Concurrency: 16, Mode: mode, Money: payrecon.MoneyChecks{Ignore: off}}
				sb.pool = plain
				if money == "on" {
					cfg.Money = cols.Checks(nil)
					sb.pool = withMoney
				}
				for b.Loop() {
					n++
					sb.sim.ResetStats()
					rep, took := sb.cycle(b, n, cfg, 0)
					b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
					b.ReportMetric(float64(sb.sim.Stats().Total())/float64(rep.Verified), "requests/row")
				}
			})
		}
	}
	sb.pool = plain
}

// BenchmarkMoneyAlternating: the money checks off and on, alternating
// cycle by cycle (three pairs per mode on 20 k rows), so that a machine
// shared with other work disturbs both sides alike; it reports each side's
// median rows/s and their ratio.
//
//	go test -run '^$' -bench MoneyAlternating -benchtime 1x ./sweep
func BenchmarkMoneyAlternating(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute")
	}
	sb := newSimBench(b, 20_000, stripesim.Faults{})
	pgtest.Exec(b, sb.pool.Pool(), "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	pgtest.Exec(b, sb.pool.Pool(), "UPDATE payments SET amount = 1000, currency = 'usd'")
	pgtest.Exec(b, sb.pool.Pool(), "VACUUM ANALYZE payments")
	cols, err := postgres.DetectMoneyColumns(context.Background(), sb.pool.Pool(), "amount", "currency")
	if err != nil {
		b.Fatal(err)
	}
	off := map[payrecon.Kind]bool{}
	for _, k := range payrecon.MoneyKinds {
		off[k] = true
	}
	plain, withMoney := sb.pool, sb.pool.WithMoneyColumns(cols)
	defer func() { sb.pool = plain }()
	median := func(xs []float64) float64 {
		s := append([]float64(nil), xs...)
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if s[j] < s[i] {
					s[i], s[j] = s[j], s[i]
				}
			}
		}
		return s[len(s)/2]
	}
	n := 0
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		b.Run(string(mode), func(b *testing.B) {
			for b.Loop() {
				var offRates, onRates []float64
				for range 3 {
					for _, on := range []bool{false, true} {
						cfg := sweep.Config{Batch: 200, Concurrency: 16, Mode: mode, Money: payrecon.MoneyChecks{Ignore: off}}
						sb.pool = plain
						if on {
							cfg.Money, sb.pool = cols.Checks(nil), withMoney
						}
						n++
						rep, took := sb.cycle(b, n, cfg, 0)
						rate := float64(rep.Verified) / took.Seconds()
						if on {
							onRates = append(onRates, rate)
						} else {
							offRates = append(offRates, rate)
						}
					}
				}
				b.Logf("%s: off %v rows/s, on %v rows/s", mode, offRates, onRates)
				b.ReportMetric(median(offRates), "off-rows/s")
				b.ReportMetric(median(onRates), "on-rows/s")
				b.ReportMetric(median(onRates)/median(offRates), "on/off")
			}
		})
	}
}
