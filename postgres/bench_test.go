package postgres_test

import (
	"context"
	"testing"
	"time"

	"payrecon/internal/pgtest"
	"payrecon/postgres"
)

// BenchmarkLagQuery1M times the reconciliation-lag query on 1 M rows, a
// third never verified: it reads one entry of payments_reconciled_order.
//
//	go test -run '^$' -bench LagQuery1M ./postgres
func BenchmarkLagQuery1M(b *testing.B) {
	pool := pgtest.NewDB(b)
	pgtest.Exec(b, pool, `INSERT INTO payments (order_id, stripe_payment_intent_id, status, created_at, last_reconciled_at)
		SELECT 'o'||g, 'pi_'||g, 'paid', now() - interval '30 days' + g * interval '1 second',
		       CASE WHEN g % 3 <> 0 THEN now() - (g % 3600) * interval '1 second' END
		  FROM generate_series(1, 1000000) g`)
	pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
	m := postgres.NewMonitor(pool)
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, ok, err := m.Lag(ctx, time.Now()); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
