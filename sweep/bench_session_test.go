package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// newSessionBench is newSimBench on a table with the session column: n
// paid rows created one per second in time order, each recording either
// its PaymentIntent (sessions false) or only its Checkout Session, complete
// with that intent (sessions true).
func newSessionBench(b *testing.B, n int, sessions bool) *simBench {
	b.Helper()
	sb := newSimBench(b, n, stripesim.Faults{})
	pool := sb.pool.Pool()
	pgtest.Exec(b, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text, ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	if sessions {
		base := time.Now().Add(-time.Duration(n+3600) * time.Second).Truncate(time.Second)
		if err := sb.sim.SeedSessions(n, func(i int) stripesim.Session {
			return stripesim.Session{ID: fmt.Sprintf("cs_bench_%08d", i), Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionPaid,
				IntentID: fmt.Sprintf("pi_bench_%08d", i), Created: base.Add(time.Duration(i) * time.Second)}
		}); err != nil {
			b.Fatal(err)
		}
		pgtest.Exec(b, pool, `UPDATE payments SET stripe_checkout_session_id = 'cs_' || substr(stripe_payment_intent_id, 4), stripe_payment_intent_id = NULL`)
		pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
	}
	sc, err := postgres.DetectSessionColumn(context.Background(), pool, postgres.SessionColumnDefault)
	if err != nil || !sc.Found {
		b.Fatalf("session column: %+v %v", sc, err)
	}
	sb.pool = sb.pool.WithSessionColumn(sc)
	return sb
}

// BenchmarkSessionListRequests: 100 k session rows created in time order,
// list mode at 25 requests/s, as BenchmarkListMode for intent rows: Stripe
// requests per verified session row.
//
//	go test -run '^$' -bench SessionListRequests -benchtime 1x ./sweep
func BenchmarkSessionListRequests(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute")
	}
	sb := newSessionBench(b, 100_000, true)
	for i := 0; b.Loop(); i++ {
		sb.sim.ResetStats()
		rep, took := sb.cycle(b, i, sweep.Config{Batch: 200, Concurrency: 8, Mode: sweep.ModeList}, 25)
		st := sb.sim.Stats()
		b.ReportMetric(float64(st.Total())/float64(rep.Verified), "requests/row")
		b.ReportMetric(float64(st.Requests[stripesim.EndpointRetrieveSession]), "retrieves")
		b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
	}
}

// BenchmarkSessionThroughput: end-to-end sweeps (no latency, no rate
// limit) of the same number of intent rows and session rows, each on a
// table with the session column, alternating, in each mode: session rows'
// throughput against intent rows'.
//
//	go test -run '^$' -bench SessionThroughput -benchtime 1x ./sweep
func BenchmarkSessionThroughput(b *testing.B) {
	if testing.Short() {
		b.Skip("takes minutes")
	}
	const n = 50_000
	benches := map[string]*simBench{"intents": newSessionBench(b, n, false), "sessions": newSessionBench(b, n, true)}
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		for round := range 2 {
			for _, kind := range []string{"intents", "sessions"} {
				b.Run(fmt.Sprintf("%s/%s/%d", mode, kind, round), func(b *testing.B) {
					sb := benches[kind]
					for i := 0; b.Loop(); i++ {
						sb.sim.ResetStats()
						rep, took := sb.cycle(b, 1000*round+i+100*len(mode), sweep.Config{Batch: 200, Concurrency: 16, Mode: mode}, 0)
						b.ReportMetric(float64(rep.Verified)/took.Seconds(), "rows/s")
						b.ReportMetric(float64(sb.sim.Stats().Total())/float64(rep.Verified), "requests/row")
					}
				})
			}
		}
	}
}
