package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// BenchmarkScanPeakMemory runs the built binary's `scan --once --mode list`
// over 100 k and 1 M rows against the simulator (in this process) and
// reports the scanning process's peak resident set (VmHWM, sampled from
// /proc while it runs; rusage's maxrss is useless here, since a child forked
// from this large test process starts with its resident set): it must stay
// flat, bounded by the batch, not by N.
//
//	go test -run '^$' -bench ScanPeakMemory -benchtime 1x -timeout 30m ./cmd/payrecon
func BenchmarkScanPeakMemory(b *testing.B) {
	if testing.Short() {
		b.Skip("takes minutes")
	}
	bin := binary(b)
	sizes := []int{100_000, 1_000_000}
	if os.Getenv("PAYRECON_BENCH_ROWS") != "" {
		var n int
		fmt.Sscan(os.Getenv("PAYRECON_BENCH_ROWS"), &n)
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			url := pgtest.NewURL(b)
			pool := pgtestPoolB(b, url)
			sim := simtest.Start(b, stripesim.Config{Seed: 1})
			base := time.Now().Add(-time.Duration(n+3600) * time.Second).Truncate(time.Second)
			id := func(i int) string { return fmt.Sprintf("pi_mem_%08d", i) }
			if err := sim.Seed(n, func(i int) stripesim.Intent {
				return stripesim.Intent{ID: id(i), Status: payrecon.IntentSucceeded, Created: base.Add(time.Duration(i) * time.Second)}
			}); err != nil {
				b.Fatal(err)
			}
			for lo := 0; lo < n; lo += 100_000 {
				ps := make([]pgtest.Payment, 0, 100_000)
				for i := lo; i < min(lo+100_000, n); i++ {
					ps = append(ps, pgtest.Payment{IntentID: id(i), Status: payrecon.StatusPaid, CreatedAt: base.Add(time.Duration(i) * time.Second)})
				}
				pgtest.InsertPayments(b, pool, ps)
			}
			for i := 0; b.Loop(); i++ {
				cmd := exec.CommandContext(context.Background(), bin, "scan", "--once", "--mode", "list", "--rps", "0",
					"--job", fmt.Sprintf("mem-%d", i), "--json")
				cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "STRIPE_SECRET_KEY="+sim.SecretKey(), "STRIPE_API_BASE="+sim.URL())
				start := time.Now()
				var outb strings.Builder
				cmd.Stdout, cmd.Stderr = &outb, &outb
				peak, err := runSampled(cmd)
				if err != nil {
					b.Fatalf("scan: %v\n%s", err, outb.String())
				}
				b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
				took := time.Since(start)
				b.ReportMetric(float64(n)/took.Seconds(), "rows/s")
			}
		})
	}
}
