package stripesim_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// benchSim starts a simulator with n intents, one per second, and a gateway
// to it over loopback.
func benchSim(b *testing.B, n int) (*stripesim.Server, *stripeapi.Gateway) {
	b.Helper()
	sim := simtest.Start(b, stripesim.Config{})
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := sim.Seed(n, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: benchID(i), Created: base.Add(time.Duration(i) * time.Second), Status: payrecon.IntentSucceeded}
	}); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL(), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		b.Fatal(err)
	}
	sim.ResetStats()
	return sim, gw
}

func benchID(i int) string { return fmt.Sprintf("pi_%08d", i) }

// BenchmarkGatewayRetrieve: one row verified per op, one request per row.
func BenchmarkGatewayRetrieve(b *testing.B) {
	const n = 100_000
	sim, gw := benchSim(b, n)
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := gw.RetrieveIntent(context.Background(), benchID(int(next.Add(1)%n))); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(sim.Stats().Total())/float64(b.N), "stripe_requests/row")
}

// BenchmarkGatewayListPage: one page of 100 per op out of 1,000,000 intents,
// continuing with starting_after and wrapping at the end.
func BenchmarkGatewayListPage(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 1,000,000 intents")
	}
	sim, gw := benchSim(b, 1_000_000)
	var q payrecon.ListQuery
	rows := 0
	b.ReportAllocs()
	for b.Loop() {
		page, err := gw.ListIntents(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		rows += len(page.Intents)
		q.StartingAfter = ""
		if page.HasMore {
			q.StartingAfter = page.Intents[len(page.Intents)-1].ID
		}
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(sim.Stats().Total())/float64(rows), "stripe_requests/row")
}

// BenchmarkGatewaySweep1M: one op lists all 1,000,000 intents, one day of
// created times per window, as the sweep's list fast path does.
func BenchmarkGatewaySweep1M(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds and sweeps 1,000,000 intents")
	}
	const n = 1_000_000
	sim, gw := benchSim(b, n)
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	end := base.Add(n * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		rows := 0
		for from := base; from.Before(end); from = from.Add(24 * time.Hour) {
			q := payrecon.ListQuery{CreatedGTE: from, CreatedLTE: from.Add(24*time.Hour - time.Second)}
			for {
				page, err := gw.ListIntents(context.Background(), q)
				if err != nil {
					b.Fatal(err)
				}
				rows += len(page.Intents)
				if !page.HasMore {
					break
				}
				q.StartingAfter = page.Intents[len(page.Intents)-1].ID
			}
		}
		if rows != n {
			b.Fatalf("swept %d rows, want %d", rows, n)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(sim.Stats().Total())/float64(b.N*n), "stripe_requests/row")
}
