package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// BenchmarkNotify measures notifications delivered per second by one
// relay process (the default 10 notification workers) to a fast local
// receiver that verifies each signature, from a backlog of
// PAYRECON_BENCH_NOTIFICATIONS (default 5,000) transitions; then the delay
// from a transition's COMMIT to the receiver's handler, relay idle between
// transitions (PAYRECON_BENCH_SAMPLES, default 300):
//
//	go test -run='^$' -bench=BenchmarkNotify -benchtime=1x ./relay/
func BenchmarkNotify(b *testing.B) {
	if testing.Short() {
		b.Skip("needs PostgreSQL")
	}
	n, _ := strconv.Atoi(env("PAYRECON_BENCH_NOTIFICATIONS", "5000"))
	samples, _ := strconv.Atoi(env("PAYRECON_BENCH_SAMPLES", "300"))
	var (
		mu      sync.Mutex
		got     = map[int64]time.Time{}
		arrived = make(chan int64, n+samples)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := payrecon.VerifyNotification(body, r.Header.Get(payrecon.SignatureHeader), notifySecret, time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var nt payrecon.Notification
		_ = json.Unmarshal(body, &nt)
		mu.Lock()
		_, dup := got[nt.ID]
		if !dup {
			got[nt.ID] = time.Now()
		}
		mu.Unlock()
		if !dup {
			arrived <- nt.ID
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	cfg := relay.Config{Notify: relay.NotifyConfig{URL: srv.URL, Secret: notifySecret}} // production defaults
	tb := setup(b, cfg)
	ctx := context.Background()
	ids := pgtest.InsertPayments(b, tb.pool, payments(n+samples))
	// The backlog: n transitions, 100 to a transaction, each with its job.
	for i := 0; i < n; i += 100 {
		err := pgx.BeginFunc(ctx, tb.pool, func(tx pgx.Tx) error {
			for _, id := range ids[i:min(i+100, n)] {
				if _, err := tb.writer.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	if err := tb.relay.Start(ctx); err != nil {
		b.Fatal(err)
	}
	for range n {
		<-arrived
	}
	took := time.Since(start)
	b.StopTimer()

	delays := make([]time.Duration, 0, samples)
	for _, id := range ids[n:] {
		time.Sleep(20 * time.Millisecond) // idle: the previous one is long delivered
		var begun time.Time
		var tid int64
		err := pgx.BeginFunc(ctx, tb.pool, func(tx pgx.Tx) error {
			res, err := tb.writer.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id})
			tid = res.Transition.ID
			begun = time.Now() // just before COMMIT
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		for <-arrived != tid {
		}
		mu.Lock()
		delays = append(delays, got[tid].Sub(begun))
		mu.Unlock()
	}
	slices.Sort(delays)
	b.ReportMetric(float64(n)/took.Seconds(), "notifications/s")
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds())/1000, "median_ms")
	b.ReportMetric(float64(delays[len(delays)*95/100].Microseconds())/1000, "p95_ms")
	b.ReportMetric(0, "ns/op")
}
