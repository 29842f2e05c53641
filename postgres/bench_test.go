package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// BenchmarkLagQuery1M times the reconciliation-lag query on 1 M rows, a
// third never verified, at steady state: the full job's cursor half-way
// through a cycle after a completed one, and 0, 20 or 1,000 rows queued for
// recheck (rows visited but not verified, each with the time it was last
// verified: the first entry of reconciliation_recheck_verified_before).
// It reads the cursor, the queue and those rows (queries/lag.sql), not
// payments' last_reconciled_at, which no index covers since 00015.
//
//	go test -run '^$' -bench LagQuery1M ./postgres
func BenchmarkLagQuery1M(b *testing.B) {
	pool := pgtest.NewDB(b)
	pgtest.Exec(b, pool, `INSERT INTO payments (order_id, stripe_payment_intent_id, status, created_at, last_reconciled_at)
		SELECT 'o'||g, 'pi_'||g, 'paid', now() - interval '30 days' + g * interval '1 second',
		       CASE WHEN g % 3 <> 0 THEN now() - (g % 3600) * interval '1 second' END
		  FROM generate_series(1, 1000000) g`)
	pgtest.Exec(b, pool, `INSERT INTO reconciliation_cursor (job, last_id, cycle_started_at, last_cycle_started_at, last_cycle_completed_at)
		VALUES ('payments-vs-stripe', 500000, now() - interval '1 hour', now() - interval '3 hours', now() - interval '1 hour')`)
	m := postgres.NewMonitor(pool)
	ctx := context.Background()
	for _, queued := range []int{0, 20, 1000} {
		b.Run(fmt.Sprintf("queued=%d", queued), func(b *testing.B) {
			pgtest.Exec(b, pool, "DELETE FROM reconciliation_recheck")
			pgtest.Exec(b, pool, `INSERT INTO reconciliation_recheck (job, payment_id, reason, due_at, verified_before)
				SELECT 'payments-vs-stripe', g * 997, 'unverifiable', now(), now() - (g || ' minutes')::interval
				  FROM generate_series(1, $1::int) g`, queued)
			pgtest.Exec(b, pool, "VACUUM ANALYZE")
			b.ResetTimer()
			for b.Loop() {
				if _, ok, err := m.Lag(ctx, time.Now()); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkCommitUnchangedBatch times CommitBatch for batches of 200 rows in
// sync whose Stripe status did not change (a cycle's steady state: nothing
// to write to payments), with and without --verified-refresh (0: every
// verified row written, as before issue 20), the cursor advancing batch
// after batch over 20 k rows: the database's part of a verified row, with
// the payrecon side of building the statement's JSON.
//
//	go test -run '^$' -bench CommitUnchangedBatch ./postgres
func BenchmarkCommitUnchangedBatch(b *testing.B) {
	const n, batch = 20_000, 200
	pool := pgtest.NewDB(b)
	pgtest.Exec(b, pool, `INSERT INTO payments (order_id, stripe_payment_intent_id, status, created_at, updated_at, observed_external_status, last_reconciled_at)
		SELECT 'o'||g, 'pi_'||g, 'paid', now() - interval '2 hours', now() - interval '2 hours', 'succeeded', now() - interval '1 hour'
		  FROM generate_series(1, $1::int) g`, n)
	pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
	store := postgres.NewStore(pool)
	ctx := context.Background()
	for _, refresh := range []time.Duration{0, 24 * time.Hour} {
		b.Run(fmt.Sprintf("refresh=%s", refresh), func(b *testing.B) {
			job := fmt.Sprintf("commit-%d", refresh)
			var rows int
			for b.Loop() {
				cur, ps, _, err := store.ReadBatch(ctx, job, batch, 0, time.Now())
				if err != nil {
					b.Fatal(err)
				}
				if len(ps) == 0 {
					if err := store.Wrap(ctx, job, cur.LastID, 0, time.Now()); err != nil {
						b.Fatal(err)
					}
					continue
				}
				checks := make([]payrecon.Check, len(ps))
				for i, p := range ps {
					checks[i] = payrecon.Check{Row: p, Observed: payrecon.IntentSucceeded, ReadAt: cur.ReadAt,
						Decision: payrecon.Classify(p.Status, payrecon.IntentSucceeded),
						Judged:   []payrecon.Kind{payrecon.KindRefundedExternally, payrecon.KindPartiallyRefunded, payrecon.KindDisputed}}
				}
				res, err := store.CommitBatch(ctx, payrecon.BatchCommit{Job: job, From: cur.LastID, To: ps[len(ps)-1].ID, Advance: true,
					Checks: checks, Now: time.Now(), VerifiedRefresh: refresh})
				if err != nil || res.Verified != len(ps) {
					b.Fatalf("commit: %+v %v", res, err)
				}
				rows += len(ps)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(max(rows, 1)), "µs/row")
		})
	}
}
