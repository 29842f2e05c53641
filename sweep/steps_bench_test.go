package sweep_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// chargedGateway answers every retrieve at once with a succeeded intent of
// 1000 usd and its captured charge: what the sweep reads for a paid row
// since the second wave.
type chargedGateway struct{}

func (chargedGateway) RetrieveIntent(_ context.Context, id string) (payrecon.Intent, error) {
	created := time.Unix(1_700_000_000, 0).UTC()
	return payrecon.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: created, Amount: 1000, AmountReceived: 1000,
		Currency: "usd", Metadata: map[string]string{},
		LatestCharge: &payrecon.Charge{ID: "ch_" + id, AmountCaptured: 1000, Currency: "usd", Created: created}}, nil
}

func (chargedGateway) ListIntents(context.Context, payrecon.ListQuery) (payrecon.IntentPage, error) {
	return payrecon.IntentPage{}, fmt.Errorf("list: %w", payrecon.ErrUnavailable)
}

// BenchmarkSecondWaveSteps measures what each per-row step the second wave
// added to a batch costs, database included, without Stripe's HTTP or JSON
// (an instant in-process gateway whose intents carry their charge): 20 k
// paid rows with amount and currency columns, retrieve mode, batch 200.
// "all" is today's sweep (money judged against the local columns, details
// written, --stuck-after's default limits, every commit fenced by a real
// lease); each other variant leaves one step out, and "none" all of them
// (the first wave's batch). Variants alternate cycle by cycle, three rounds
// (PAYRECON_BENCH_ROUNDS);
// each reports its median time per verified row, and the cost of a step is
// "all" minus the variant without it.
//
//	go test -run '^$' -bench SecondWaveSteps -benchtime 1x ./sweep
func BenchmarkSecondWaveSteps(b *testing.B) {
	const n = 20_000
	pool := pgtest.NewDB(b)
	pgtest.Exec(b, pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	old := time.Now().Add(-time.Hour)
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_%07d", i), Status: payrecon.StatusPaid, CreatedAt: old}
	}
	pgtest.InsertPayments(b, pool, ps)
	pgtest.Exec(b, pool, "UPDATE payments SET amount = 1000, currency = 'usd'")
	pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
	cols, err := postgres.DetectMoneyColumns(context.Background(), pool, "amount", "currency")
	if err != nil {
		b.Fatal(err)
	}
	stuck, err := payrecon.ParseStuckAfter(payrecon.DefaultStuckAfter)
	if err != nil {
		b.Fatal(err)
	}
	ignoreMoney := map[payrecon.Kind]bool{}
	for _, k := range payrecon.MoneyKinds {
		ignoreMoney[k] = true
	}
	type variant struct {
		name                string
		money, stuck, fence bool
	}
	variants := []variant{
		{"all", true, true, true},
		{"no-money", false, true, true},
		{"no-stuck", true, false, true},
		{"no-fence", true, true, false},
		{"none", false, false, false},
	}
	lease := func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLeaseTimeout(ctx, pool, job, wait, 30*time.Second)
	}
	job := 0
	run := func(v variant) time.Duration {
		job++
		cfg := sweep.Config{Job: fmt.Sprintf("steps-%d", job), Batch: 200, Concurrency: 8, Mode: sweep.ModeRetrieve,
			Money: payrecon.MoneyChecks{Ignore: ignoreMoney}}
		store := postgres.NewStore(pool)
		if v.money {
			store, cfg.Money = store.WithMoneyColumns(cols), cols.Checks(nil)
		}
		if v.stuck {
			cfg.StuckAfter = stuck
		}
		if v.fence {
			cfg.LeaseFunc = lease
		}
		start := time.Now()
		rep, err := mustNew(store, chargedGateway{}, cfg).RunCycle(context.Background(), nil)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Verified != n {
			b.Fatalf("%s: verified %d of %d", v.name, rep.Verified, n)
		}
		return time.Since(start) / n
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	for _, v := range variants { // warm-up
		run(v)
	}
	for b.Loop() {
		per := map[string][]float64{}
		for range rounds {
			for _, v := range variants {
				per[v.name] = append(per[v.name], float64(run(v).Nanoseconds())/1e3)
			}
		}
		med := func(name string) float64 {
			s := slices.Clone(per[name])
			slices.Sort(s)
			return s[len(s)/2]
		}
		for _, v := range variants {
			b.Logf("%s: %v µs per row", v.name, per[v.name])
			b.ReportMetric(med(v.name), v.name+"-µs/row")
		}
	}
}
