package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// BenchmarkPrune times a prune of 200 k processed outbox commands (each
// checked against River's jobs and its finding) and 200 k webhook events,
// all past their retention, in batches of 1,000: rows per second, and the
// longest batch (the longest any row lock is held).
//
//	go test -run '^$' -bench Prune -benchtime 1x ./postgres
func BenchmarkPrune(b *testing.B) {
	const n = 200000
	for b.Loop() {
		b.StopTimer()
		pool := pgtest.NewDB(b)
		pgtest.Exec(b, pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at, processed_at, outcome)
			SELECT 'Payment', g::text, 'ApplyPaymentSucceeded', jsonb_build_object('payment_id', g, 'finding_id', g),
			       now() - interval '90 days', now() - interval '60 days' + g * interval '1 millisecond', 'applied'
			  FROM generate_series(1, 200000) g`)
		pgtest.Exec(b, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
			SELECT 'evt_' || g, 'payment_intent.succeeded', now() - interval '60 days' + g * interval '1 millisecond', 'applied'
			  FROM generate_series(1, 200000) g`)
		pgtest.Exec(b, pool, "VACUUM ANALYZE outbox")
		pgtest.Exec(b, pool, "VACUUM ANALYZE stripe_webhook_events")
		p, err := postgres.NewPruner(pool, postgres.PrunerConfig{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rep, err := p.Prune(context.Background(), postgres.PruneOpts{})
		took := time.Since(start)
		if err != nil || rep.Deleted != 2*n {
			b.Fatalf("deleted %d of %d: %v", rep.Deleted, 2*n, err)
		}
		batches := 0
		for _, tr := range rep.Targets {
			if tr.Deleted == 0 {
				continue
			}
			batches += tr.Batches
			b.ReportMetric(float64(tr.LongestBatch.Microseconds())/1000, tr.Target+"_longest_batch_ms")
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(batches), "mean_batch_ms")
		b.ReportMetric(float64(2*n)/took.Seconds(), "rows/s")
	}
}
