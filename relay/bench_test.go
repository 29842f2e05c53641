package relay_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// BenchmarkDrain measures repair commands applied per second when one or
// two relay processes drain 100 k queued commands:
//
//	go test -run='^$' -bench=BenchmarkDrain -benchtime=1x ./relay/
//
// Each process is this test binary re-executed as a drainer with the
// default configuration and PAYRECON_BENCH_WORKERS workers (default
// relay.WorkersDefault). The
// reported commands/s is wall time from starting the processes to the last
// one's exit (process start-up included); db_commands/s is the span between
// the first and the last processed_at.
func BenchmarkDrain(b *testing.B) {
	if testing.Short() {
		b.Skip("drains 100 k commands")
	}
	n, _ := strconv.Atoi(env("PAYRECON_BENCH_COMMANDS", "100000"))
	workers, _ := strconv.Atoi(env("PAYRECON_BENCH_WORKERS", strconv.Itoa(relay.WorkersDefault)))
	for _, procs := range []int{1, 2} {
		b.Run(fmt.Sprintf("processes=%d", procs), func(b *testing.B) {
			var elapsed, span time.Duration
			for range b.N {
				b.StopTimer()
				tb := seedQueuedNoAudit(b, n)
				b.StartTimer()
				start := time.Now()
				ds := make([]*drainer, procs)
				for i := range ds {
					ds[i] = startDrainer(b, "bench", tb.url, workers)
				}
				var wg sync.WaitGroup
				errs := make([]error, procs)
				for i, d := range ds {
					wg.Go(func() { _, errs[i] = d.wait() })
				}
				wg.Wait()
				elapsed += time.Since(start)
				b.StopTimer()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				var s float64
				if err := tb.pool.QueryRow(context.Background(),
					"SELECT extract(epoch FROM max(processed_at) - min(processed_at)) FROM outbox").Scan(&s); err != nil {
					b.Fatal(err)
				}
				span += time.Duration(s * float64(time.Second))
				if got := pgtest.Count(b, tb.pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1"); got != n {
					b.Fatalf("%d of %d payments paid once", got, n)
				}
				if got := pgtest.Count(b, tb.pool, "SELECT count(*) FROM outbox WHERE processed_at IS NOT NULL AND outcome = 'applied'"); got != n {
					b.Fatalf("%d of %d commands recorded as applied", got, n)
				}
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "commands/s")
			b.ReportMetric(float64(n*b.N)/span.Seconds(), "db_commands/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkRepairDelay measures the delay from the commit of a finding (with
// its outbox command and River job, as the sweep writes them) to its repair,
// with the relay idle between findings: River's insert notification wakes
// it.
//
//	go test -run='^$' -bench=BenchmarkRepairDelay -benchtime=1x ./relay/
//
// The delay runs from just before the finding's COMMIT to the moment the
// repair's effect is visible to another session (polled every 0.5 ms, so
// up to 0.5 ms late).
func BenchmarkRepairDelay(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL")
	}
	samples, _ := strconv.Atoi(env("PAYRECON_BENCH_SAMPLES", "300"))
	cfg := relay.Config{} // production defaults
	tb := setup(b, cfg)
	ctx := context.Background()
	if err := tb.relay.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// The sweep's process only inserts.
	sweep, err := relay.New(tb.pool, postgres.NewWriter(nil), relay.Config{InsertOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	ins := &testBundle{url: tb.url, pool: tb.pool, writer: tb.writer, relay: sweep}
	ids := pgtest.InsertPayments(b, tb.pool, payments(samples))
	delays := make([]time.Duration, 0, samples)
	b.ResetTimer()
	for range b.N {
		delays = delays[:0]
		for i := range samples {
			pgtest.Exec(b, tb.pool, "SELECT 1") // idle: the previous repair is long done
			start := time.Now()
			rs, err := ins.commitRepairs(ctx, ids[i:i+1], true)
			if err != nil {
				b.Fatal(err)
			}
			tick := time.NewTicker(500 * time.Microsecond)
			for {
				var done bool
				if err := tb.pool.QueryRow(ctx, "SELECT processed_at IS NOT NULL FROM outbox WHERE id = $1", rs.outbox[0]).Scan(&done); err != nil {
					b.Fatal(err)
				}
				if done {
					break
				}
				<-tick.C
			}
			tick.Stop()
			delays = append(delays, time.Since(start))
		}
		if b.N > 1 {
			b.Fatal("run with -benchtime=1x: each run uses its own payments")
		}
	}
	b.StopTimer()
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median_ms")
	b.ReportMetric(float64(delays[len(delays)*95/100].Microseconds())/1000, "p95_ms")
	b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "max_ms")
	b.ReportMetric(0, "ns/op")
}

func payments(n int) []pgtest.Payment {
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_bench_%d", i), Status: payrecon.StatusPending}
	}
	return ps
}
