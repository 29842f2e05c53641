package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
)

// batchesCommitted reads payrecon_sweep_batches_total of the full job from
// a process's admin listener; -1 when it cannot.
func batchesCommitted(admin string) int {
	code, body := httpGet("http://" + admin + "/metrics")
	if code != 200 {
		return -1
	}
	m := regexp.MustCompile(`(?m)^payrecon_sweep_batches_total\{job="payments-vs-stripe"\} (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return int(n)
}

// A frozen lease holder (SIGSTOP: its process, its connections and its
// session lock all stay) loses the sweep to a standby within
// --lease-timeout of its last heartbeat; woken up (SIGCONT) in the middle
// of a batch, it commits nothing under the lost lease (fencing), and it
// steps down to wait for the lease again (issue 13, defect 3).
func TestFrozenLeaseHolderIsReplacedAndFenced(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := make([][2]string, 3000)
	for i := range rows {
		rows[i] = [2]string{"paid", "succeeded"}
	}
	b.seed(t, rows)
	b.sim.SetFaults(stripesim.Faults{Latency: 5 * time.Millisecond})
	const timeout = 2 * time.Second
	args := []string{"run", "--grace", "0", "--min-cycle", "200ms", "--batch", "20", "--rps", "300", "--log-format", "json",
		"--mode", "retrieve", "--concurrency", "4", "--lease-timeout", timeout.String()}
	pool := pgtestPool(t, b.url)
	admin1 := freeAddr(t)
	p1 := startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", admin1)...)
	testkit.WaitFor(t, "the first process to hold the lease", 30*time.Second, func() bool { return leaseHolderPID(t, pool) == p1.cmd.Process.Pid })
	p2 := startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...)
	testkit.WaitFor(t, "the second process to wait for the lease", 30*time.Second, func() bool {
		return strings.Contains(p2.stderr.String(), "waiting for the sweep lease")
	})
	testkit.WaitFor(t, "the first process to commit batches", 30*time.Second, func() bool { return batchesCommitted(admin1) >= 3 })

	// Stripe hangs: the first process reads its next batch and waits for
	// Stripe, so no batch of its can complete; once its count is steady,
	// it is frozen in the middle of that batch.
	b.sim.SetFaults(stripesim.Faults{Latency: 4 * time.Second})
	var before int
	testkit.WaitFor(t, "the first process's batch count to settle", 30*time.Second, func() bool {
		n := batchesCommitted(admin1)
		time.Sleep(time.Second)
		before = batchesCommitted(admin1)
		return n == before && n > 0
	})
	epoch1 := pgtest.Count(t, pool, "SELECT epoch FROM payrecon_leases WHERE job = 'payments-vs-stripe'")
	if err := p1.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	b.sim.SetFaults(stripesim.Faults{Latency: 5 * time.Millisecond})
	testkit.WaitFor(t, "the standby to take over", 60*time.Second, func() bool { return leaseHolderPID(t, pool) == p2.cmd.Process.Pid })
	took := time.Since(stopped)
	t.Logf("standby took over %s after SIGSTOP (lease timeout %s)", took.Round(time.Millisecond), timeout)
	// The heartbeat is silent from SIGSTOP at the latest, so the takeover
	// is due by timeout plus a standby's poll; a loaded machine gets slack,
	// but not a minute.
	if took > timeout+8*time.Second {
		t.Errorf("takeover took %s with --lease-timeout %s", took, timeout)
	}
	if epoch2 := pgtest.Count(t, pool, "SELECT epoch FROM payrecon_leases WHERE job = 'payments-vs-stripe'"); epoch2 <= epoch1 {
		t.Errorf("epoch %d after the takeover, was %d: want it bumped", epoch2, epoch1)
	}
	cursor := pgtest.Count(t, pool, "SELECT last_id FROM reconciliation_cursor WHERE job = 'payments-vs-stripe'")
	testkit.WaitFor(t, "the standby to sweep", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT last_id FROM reconciliation_cursor WHERE job = 'payments-vs-stripe'") != cursor
	})

	if err := p1.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the woken holder to step down", 60*time.Second, func() bool {
		return strings.Contains(p1.stderr.String(), "sweep lease lost")
	})
	if !strings.Contains(p1.stderr.String(), "taken over by another holder") {
		t.Errorf("the woken holder does not say its lease was taken over:\n%s", tail(p1.stderr.String(), 10))
	}
	testkit.WaitFor(t, "the woken holder to wait for the lease again", 60*time.Second, func() bool {
		return strings.Count(p1.stderr.String(), "waiting for the sweep lease") >= 2
	})
	if after := batchesCommitted(admin1); after != before {
		t.Errorf("the woken holder committed %d batches under a lost lease (%d before SIGSTOP, %d after SIGCONT)\n%s",
			after-before, before, after, tail(p1.stderr.String(), 20))
	}
	if h, _ := postgres.LeaseHolderOf(context.Background(), pool, "payments-vs-stripe"); h == nil || !strings.Contains(h.ApplicationName, fmt.Sprintf("pid %d", p2.cmd.Process.Pid)) {
		t.Errorf("lease holder after the wake-up = %+v, want the standby", h)
	}
	for _, l := range strings.Split(p1.stderr.String(), "\n") {
		if strings.Contains(l, "lease") {
			t.Logf("first process: %s", l)
		}
	}
	if code, ok := p1.wait(t, 0); ok {
		t.Errorf("the woken holder exited (%d); it must stay up as a standby", code)
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// `scan --once` while another process holds the job's lease (heartbeating):
// exit status 3, naming the holder; with --wait it waits, and sweeps once
// the holder lets go. A holder whose heartbeat is older than
// --lease-timeout does not count: scan takes the lease over.
func TestScanOnceLeaseHeldExitsThree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}, {"paid", "succeeded"}})
	pool := pgtestPool(t, b.url)
	ctx := context.Background()
	l, err := postgres.AcquireLeaseTimeout(ctx, pool, "payments-vs-stripe", false, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, b.env, "scan", "--once", "--rps", "0")
	if r.code != 3 || !strings.Contains(r.stderr, "being swept by another process (backend pid") {
		t.Fatalf("scan while the lease is held: exit %d, stderr %q; want 3 naming the holder", r.code, r.stderr)
	}
	done := make(chan result, 1)
	go func() { done <- runCLI(t, b.env, "scan", "--once", "--wait", "--rps", "0") }()
	select {
	case r := <-done:
		t.Fatalf("scan --wait returned while the lease was held: %d %s", r.code, r.stderr)
	case <-time.After(2 * time.Second):
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("scan --wait after the release: exit %d %s", r.code, r.stderr)
	}

	// A frozen holder: its session stays, its heartbeat stops (the row's
	// heartbeat is set back, as if it had been silent for a minute).
	l, err = postgres.AcquireLeaseTimeout(ctx, pool, "payments-vs-stripe", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx) //nolint:errcheck
	pgtest.Exec(t, pool, "UPDATE payrecon_leases SET heartbeat_at = now() - interval '1 minute' WHERE job = 'payments-vs-stripe'")
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0", "--lease-timeout", "30s"); r.code != 0 {
		t.Fatalf("scan with a holder silent for a minute (--lease-timeout 30s): exit %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0", "--lease-timeout", "500ms"); r.code != 2 {
		t.Errorf("--lease-timeout 500ms: exit %d, want 2", r.code)
	}
}
