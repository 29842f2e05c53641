package catchup_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// benchDuration is how long each benchmark runs the service's parts
// (PAYRECON_BENCH_DURATION, default 5 minutes).
func benchDuration(b *testing.B, def time.Duration) time.Duration {
	if v := os.Getenv("PAYRECON_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("PAYRECON_BENCH_DURATION: %v", err)
		}
		return d
	}
	return def
}

// benchParts is the service's sweep and catch-up on one table and one
// simulator, sharing one 25 requests/s budget, as `payrecon run` wires them.
type benchParts struct {
	pool    *pgxpool.Pool
	sim     *stripesim.Server
	pending []string // intents of pending rows, in random order
	sweeper *sweep.Sweeper
	catcher *catchup.Catcher
}

func newBenchParts(b *testing.B, rows int, interval time.Duration) *benchParts {
	b.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewURL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	sim := simtest.Start(b, stripesim.Config{Seed: 11})
	now := time.Now()
	span := 30 * 24 * time.Hour
	ps := make([]pgtest.Payment, rows)
	intents := make([]stripesim.Intent, rows)
	p := &benchParts{pool: pool, sim: sim}
	for i := range ps {
		id := fmt.Sprintf("pi_bench_%08d", i)
		created := now.Add(-span + time.Duration(i)*(span/time.Duration(rows))).Truncate(time.Second)
		local, remote := payrecon.StatusPaid, payrecon.IntentSucceeded
		if i%10 == 3 {
			local, remote = payrecon.StatusPending, payrecon.IntentRequiresPaymentMethod
			p.pending = append(p.pending, id)
		}
		ps[i] = pgtest.Payment{IntentID: id, Status: local, CreatedAt: created}
		intents[i] = stripesim.Intent{ID: id, Status: remote, Created: created, Amount: 1000, AmountReceived: 1000, Currency: "usd"}
		if remote != payrecon.IntentSucceeded {
			intents[i].AmountReceived = 0
		}
	}
	start := time.Now()
	for lo := 0; lo < rows; lo += 100_000 {
		if _, err := pgtest.CopyPayments(ctx, pool, ps[lo:min(lo+100_000, rows)]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, "ANALYZE payments"); err != nil {
		b.Fatal(err)
	}
	if err := sim.Seed(rows, func(i int) stripesim.Intent { return intents[i] }); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d rows in %s", rows, time.Since(start).Round(time.Second))
	// Lost webhooks hit random pending rows, anywhere in the table.
	for i := len(p.pending) - 1; i > 0; i-- {
		j := (i * 7919) % (i + 1)
		p.pending[i], p.pending[j] = p.pending[j], p.pending[i]
	}

	limiter := budget.NewLimiter(25)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL(), RateLimitedFunc: limiter.OnRateLimited})
	if err != nil {
		b.Fatal(err)
	}
	lease := func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLease(ctx, pool, job, wait)
	}
	if p.sweeper, err = sweep.New(postgres.NewStore(pool), gw, sweep.Config{Limiter: limiter, LeaseFunc: lease}); err != nil {
		b.Fatal(err)
	}
	p.catcher = mustNew(gw, postgres.NewEvents(pool, postgres.NewWriter(nil), nil), postgres.NewEventCursors(pool),
		catchup.Config{Interval: interval, Limiter: limiter, LeaseFunc: lease})
	return p
}

// run runs the sweep and the catch-up until ctx ends.
func (p *benchParts) run(ctx context.Context, b *testing.B) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.sweeper.Run(ctx, nil); err != nil {
			b.Error(err)
		}
	})
	wg.Go(func() {
		if err := p.catcher.Run(ctx); err != nil {
			b.Error(err)
		}
	})
	return &wg
}

// BenchmarkDetectionDelay measures the time from a lost
// payment_intent.succeeded (created in the simulator, never delivered) to the
// catch-up applying it, with the full sweep running beside it on the same
// 25 requests/s budget, on a table of 100 k and of 1 M rows. Target: p99 ≤
// the events interval (30 s) + 5 s, at both sizes. One lost event every 3 s
// for PAYRECON_BENCH_DURATION (default 5 minutes).
//
//	go test -run '^$' -bench BenchmarkDetectionDelay -benchtime 1x -timeout 60m ./catchup
func BenchmarkDetectionDelay(b *testing.B) {
	for _, rows := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			const interval = 30 * time.Second
			p := newBenchParts(b, rows, interval)
			ctx, cancel := context.WithCancel(context.Background())
			wg := p.run(ctx, b)
			b.ResetTimer()
			moved := map[string]time.Time{}
			var events []string
			end := time.Now().Add(benchDuration(b, 5*time.Minute))
			for i := 0; time.Now().Before(end) && i < len(p.pending); i++ {
				ev, err := p.sim.SetStatus(p.pending[i], payrecon.IntentSucceeded)
				if err != nil {
					b.Fatal(err)
				}
				moved[ev] = time.Now()
				events = append(events, ev)
				time.Sleep(3 * time.Second)
			}
			// The last events get one more interval and the margin.
			deadline := time.Now().Add(interval + 10*time.Second)
			for time.Now().Before(deadline) && pgtest.Count(b, p.pool, "SELECT count(*) FROM stripe_webhook_events") < len(events) {
				time.Sleep(100 * time.Millisecond)
			}
			b.StopTimer()
			cancel()
			wg.Wait()

			rs, err := p.pool.Query(context.Background(), "SELECT event_id, received_at FROM stripe_webhook_events WHERE outcome = $1", string(payrecon.Applied))
			if err != nil {
				b.Fatal(err)
			}
			var (
				id     string
				at     time.Time
				delays []float64
			)
			if _, err := pgx.ForEachRow(rs, []any{&id, &at}, func() error {
				delays = append(delays, at.Sub(moved[id]).Seconds())
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if len(delays) != len(events) {
				b.Fatalf("%d of %d lost events applied by the catch-up", len(delays), len(events))
			}
			swept := pgtest.Count(b, p.pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL")
			findings := pgtest.Count(b, p.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1", string(payrecon.KindMissedSuccess))
			slices.Sort(delays)
			q := func(f float64) float64 { return delays[min(len(delays)-1, int(f*float64(len(delays))))] }
			b.ReportMetric(float64(len(delays)), "events")
			b.ReportMetric(q(0.5), "p50_s")
			b.ReportMetric(q(0.99), "p99_s")
			b.ReportMetric(delays[len(delays)-1], "max_s")
			b.ReportMetric(float64(swept), "rows_swept")
			b.ReportMetric(float64(findings), "sweep_found")
			b.Logf("%d lost events: delay p50 %.1fs p90 %.1fs p99 %.1fs max %.1fs; meanwhile the sweep verified %d of %d rows and opened %d missed_success findings",
				len(delays), q(0.5), q(0.9), q(0.99), delays[len(delays)-1], swept, rows, findings)
		})
	}
}

// BenchmarkCatchUpQuietCost counts the Stripe requests the catch-up makes
// when nothing happens, at a 30 s interval (target ≤ 2 a minute), over
// PAYRECON_BENCH_DURATION (default 3 minutes) of real time.
//
//	go test -run '^$' -bench BenchmarkCatchUpQuietCost -benchtime 1x ./catchup
func BenchmarkCatchUpQuietCost(b *testing.B) {
	p := newBenchParts(b, 1000, 30*time.Second)
	// One event first, so the quiet rounds walk forward from a cursor (a
	// fresh cursor's round is one request too).
	if _, err := p.sim.SetStatus(p.pending[0], payrecon.IntentSucceeded); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := p.catcher.Run(ctx); err != nil {
			b.Error(err)
		}
	})
	for pgtest.Count(b, p.pool, "SELECT count(*) FROM stripe_webhook_events") == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	before := p.sim.Stats().Requests[stripesim.EndpointListEvents]
	b.ResetTimer()
	d := benchDuration(b, 3*time.Minute)
	time.Sleep(d)
	b.StopTimer()
	n := p.sim.Stats().Requests[stripesim.EndpointListEvents] - before
	cancel()
	wg.Wait()
	perMinute := float64(n) / d.Minutes()
	b.ReportMetric(perMinute, "requests/min")
	b.Logf("%d GET /v1/events requests in %s of quiet: %.2f a minute", n, d, perMinute)
}
