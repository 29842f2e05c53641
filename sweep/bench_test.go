package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// BenchmarkSweepInstantGateway measures the database cost of the sweep
// alone: 100 k rows (1 % drifted) against an in-memory gateway that answers
// at once. Each iteration is one full cycle on a fresh job.
//
//	go test -run '^$' -bench SweepInstantGateway -benchtime 3x ./sweep
func BenchmarkSweepInstantGateway(b *testing.B) {
	for _, batch := range []int{200, 1000} {
		b.Run(fmt.Sprintf("rows=100k/batch=%d", batch), func(b *testing.B) {
			const n = 100_000
			pool := pgtest.NewDB(b)
			gw := newFakeGateway()
			old := time.Now().Add(-time.Hour)
			ps := make([]pgtest.Payment, n)
			for i := range ps {
				id := fmt.Sprintf("pi_%07d", i)
				ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old}
				s := payrecon.IntentSucceeded
				if i%100 == 0 {
					ps[i].Status = payrecon.StatusPending
				}
				gw.set(id, s)
			}
			pgtest.InsertPayments(b, pool, ps)
			store := postgres.NewStore(pool)
			b.ResetTimer()
			var rows int
			var took time.Duration
			for i := 0; b.Loop(); i++ {
				s := mustNew(store, gw, sweep.Config{Job: fmt.Sprintf("bench-%d", i), Batch: batch, Concurrency: 8, Mode: sweep.ModeRetrieve})
				start := time.Now()
				rep, err := s.RunCycle(context.Background(), nil)
				if err != nil {
					b.Fatal(err)
				}
				took += time.Since(start)
				rows += rep.Verified
			}
			b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
		})
	}
}
