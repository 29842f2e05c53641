package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// BenchmarkPayoutsProcess runs the built binary's `payouts --once` as a
// process of its own against the simulator (in this process) over 1,000
// payouts of 100 lines (99,000 local payments): the first run reads and
// judges every line, the second finds every payout read and only lists
// and judges. It reports lines per second of the whole process (start-up,
// the key and schema checks, the reads, the writes, the judgment, exit),
// the wall time of each run, and the process's peak resident set.
//
//	go test -run '^$' -bench PayoutsProcess -benchtime 1x -timeout 30m ./cmd/payrecon
func BenchmarkPayoutsProcess(b *testing.B) {
	n := 100_000
	if v := os.Getenv("PAYRECON_BENCH_LINES"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	const perPayout = 100
	charges := n / perPayout * (perPayout - 1)
	bin := binary(b)
	url := pgtest.NewURL(b)
	pool := pgtestPoolB(b, url)
	sim := simtest.Start(b, stripesim.Config{Seed: 1})
	ctx := context.Background()
	pgtest.Exec(b, pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	base := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	id := func(i int) string { return fmt.Sprintf("pi_proc_%08d", i) }
	created := func(i int) time.Time { return base.Add(time.Duration(i) * 20 * time.Second) }
	if err := sim.Seed(charges, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: id(i), Amount: 1000 + int64(i%500), Status: payrecon.IntentSucceeded, Created: created(i)}
	}); err != nil {
		b.Fatal(err)
	}
	rows := make([][]any, charges)
	for i := range rows {
		rows[i] = []any{fmt.Sprintf("order_%08d", i), id(i), string(payrecon.StatusPaid), created(i), created(i),
			1000 + int64(i%500), "usd", string(payrecon.IntentSucceeded)}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"payments"}, []string{"order_id", "stripe_payment_intent_id", "status",
		"created_at", "updated_at", "amount", "currency", "observed_external_status"}, pgx.CopyFromRows(rows)); err != nil {
		b.Fatal(err)
	}
	for p := range n / perPayout {
		ids := make([]string, perPayout-1)
		for j := range ids {
			ids[j] = id(p*(perPayout-1) + j)
		}
		if _, err := sim.CreatePayout(stripesim.PayoutSpec{Intents: ids, Created: created((p + 1) * (perPayout - 1)).Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
	}
	runOnce := func(b *testing.B, label string) {
		cmd := exec.CommandContext(ctx, bin, "payouts", "--once", "--json", "--rps", "0")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "STRIPE_SECRET_KEY="+sim.SecretKey(), "STRIPE_API_BASE="+sim.URL())
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		peak, err := runSampled(cmd)
		if err != nil {
			b.Fatalf("payouts --once: %v\n%s", err, stderr.String())
		}
		took := time.Since(start)
		var rep struct {
			Lines int `json:"lines"`
		}
		if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
			b.Fatalf("%v\n%s", err, stdout.String())
		}
		b.ReportMetric(took.Seconds(), "s-"+label)
		b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB-"+label)
		if label == "first" {
			if rep.Lines != n {
				b.Fatalf("read %d lines, want %d", rep.Lines, n)
			}
			b.ReportMetric(float64(n)/took.Seconds(), "lines/s")
		}
	}
	for b.Loop() {
		b.StopTimer()
		pgtest.Exec(b, pool, "TRUNCATE stripe_payout_lines, stripe_payouts")
		pgtest.Exec(b, pool, "DELETE FROM reconciliation_findings")
		b.StartTimer()
		runOnce(b, "first")
		runOnce(b, "again")
	}
}

// runSampled starts cmd, waits for it, and returns its peak resident set
// in kB (VmHWM, sampled from /proc every 50 ms while it runs).
func runSampled(cmd *exec.Cmd) (int, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	peak := 0
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			return peak, err
		case <-time.After(50 * time.Millisecond):
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
				for _, line := range strings.Split(string(st), "\n") {
					var kb int
					if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil && kb > peak {
						peak = kb
					}
				}
			}
		}
	}
}
