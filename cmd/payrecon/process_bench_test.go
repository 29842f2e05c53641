package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// The whole-process benchmarks run the built binary's `scan --once` against
// the Stripe simulator served by a process of its own (this test binary
// re-executed as TestHelperSimulator), so that the scanning process's CPU
// (user + system, from its rusage) is payrecon's alone, and measure it from
// outside: wall time, rows per second, CPU per verified row. With
// PAYRECON_BENCH_BEFORE naming another build of payrecon (an older commit)
// they run it and this tree's binary alternately on the same PostgreSQL
// and the same simulator, so a machine shared with other work disturbs both
// alike, and report each side's median and their ratio.
const (
	simHelperRows    = "PAYRECON_SIM_HELPER_ROWS"
	simHelperBase    = "PAYRECON_SIM_HELPER_BASE"
	simHelperLatency = "PAYRECON_SIM_HELPER_LATENCY"
)

// benchIntentID is the id of the i-th intent of a process benchmark.
func benchIntentID(i int) string { return fmt.Sprintf("pi_proc_%08d", i) }

// TestHelperSimulator is not a test: run as a child with simHelperRows set,
// it seeds that many succeeded PaymentIntents (created one per second from
// simHelperBase, unix seconds; each with its charge), serves the simulator
// on a loopback port with simHelperLatency added to every answer, prints its
// URL on a line of stdout, and serves until its stdin closes.
func TestHelperSimulator(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(simHelperRows))
	if err != nil {
		return
	}
	base, _ := strconv.ParseInt(os.Getenv(simHelperBase), 10, 64)
	latency, _ := time.ParseDuration(os.Getenv(simHelperLatency))
	sim, err := stripesim.Start(stripesim.Config{Seed: 1, Faults: stripesim.Faults{Latency: latency}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		os.Exit(1)
	}
	if err := sim.Seed(n, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: benchIntentID(i), Status: payrecon.IntentSucceeded, Created: time.Unix(base+int64(i), 0)}
	}); err != nil {
		fmt.Fprintln(os.Stderr, "simulator:", err)
		os.Exit(1)
	}
	fmt.Println(sim.URL())
	_, _ = io.Copy(io.Discard, os.Stdin)
	sim.Close()
	os.Exit(0)
}

// simProcess is a simulator served by a process of its own.
type simProcess struct {
	url   string
	stdin io.WriteCloser
	cmd   *exec.Cmd
}

func startSimProcess(tb testing.TB, rows int, base time.Time, latency time.Duration) *simProcess {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSimulator$", "-test.count=1")
	cmd.Env = append(os.Environ(), simHelperRows+"="+strconv.Itoa(rows),
		simHelperBase+"="+strconv.FormatInt(base.Unix(), 10), simHelperLatency+"="+latency.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &simProcess{stdin: stdin, cmd: cmd}
	tb.Cleanup(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("simulator process: %v", err)
	}
	p.url = strings.TrimSpace(line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// scanRun is what one `scan --once` process did, measured from outside.
type scanRun struct {
	rep  sweep.CycleReport
	wall time.Duration
	cpu  time.Duration // user + system
}

func (r scanRun) rowsPerSec() float64 { return float64(r.rep.Verified) / r.wall.Seconds() }
func (r scanRun) cpuPerRow() time.Duration {
	return r.cpu / time.Duration(max(r.rep.Verified, 1))
}

// procBench is a database seeded for the whole-process benchmarks, and
// the simulator process that holds the same intents.
type procBench struct {
	sim  *simProcess
	rows int
	// urls are the databases, one per binary (each migrated by its own
	// binary: an older build refuses a schema newer than it knows).
	urls map[string]string
}

// newProcBench seeds n paid rows (amount 1000 usd, created one per second
// in time order) in one database per binary, migrated by that binary, and
// starts the simulator process with the same intents.
func newProcBench(b *testing.B, n int, latency time.Duration, bins []string) *procBench {
	b.Helper()
	base := time.Now().Add(-time.Duration(n+3600) * time.Second).Truncate(time.Second)
	pb := &procBench{sim: startSimProcess(b, n, base, latency), rows: n, urls: map[string]string{}}
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: benchIntentID(i), Status: payrecon.StatusPaid, CreatedAt: base.Add(time.Duration(i) * time.Second)}
	}
	for _, bin := range bins {
		url := pgtest.NewEmptyURL(b)
		if out, err := exec.Command(bin, "migrate", "--database-url", url).CombinedOutput(); err != nil {
			b.Fatalf("%s migrate: %v\n%s", bin, err, out)
		}
		pool := pgtestPoolB(b, url)
		pgtest.Exec(b, pool, "ALTER TABLE payments ADD COLUMN IF NOT EXISTS amount bigint, ADD COLUMN IF NOT EXISTS currency text")
		for i := 0; i < n; i += 100_000 {
			pgtest.InsertPayments(b, pool, ps[i:min(i+100_000, n)])
		}
		pgtest.Exec(b, pool, "UPDATE payments SET amount = 1000, currency = 'usd'")
		pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
		pool.Close()
		pb.urls[bin] = url
	}
	return pb
}

// scan runs bin's `scan --once --json` with args on a fresh job and
// returns what it did. profile, when set, is passed as --cpu-profile.
func (pb *procBench) scan(b *testing.B, bin, job, profile string, args ...string) scanRun {
	b.Helper()
	args = append([]string{"scan", "--once", "--json", "--job", job}, args...)
	if profile != "" {
		args = append(args, "--cpu-profile", profile)
	}
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+pb.urls[bin], "STRIPE_SECRET_KEY="+stripesim.DefaultSecretKey,
		"STRIPE_API_BASE="+pb.sim.url, "PAYRECON_LOG_LEVEL=warn")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	run := scanRun{wall: time.Since(start), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if err := json.Unmarshal([]byte(stdout.String()), &run.rep); err != nil {
		b.Fatalf("scan output: %v\n%s", err, stdout.String())
	}
	if run.rep.Verified != pb.rows {
		b.Fatalf("%s verified %d of %d rows\n%s", bin, run.rep.Verified, pb.rows, stdout.String())
	}
	return run
}

// loadAverage is the one-minute load average, to print beside a figure
// measured on a shared machine.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	return f
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchSide is a build of payrecon a process benchmark runs.
type benchSide struct{ name, bin string }

// benchSides are this tree's binary ("after") and, with
// PAYRECON_BENCH_BEFORE, the build it names ("before", first), with their
// paths.
func benchSides(b *testing.B) ([]benchSide, []string) {
	b.Helper()
	sides := []benchSide{{"after", binary(b)}}
	if before := os.Getenv("PAYRECON_BENCH_BEFORE"); before != "" {
		abs, err := filepath.Abs(before)
		if err != nil {
			b.Fatal(err)
		}
		sides = append([]benchSide{{"before", abs}}, sides...)
	}
	bins := make([]string, len(sides))
	for i, s := range sides {
		bins[i] = s.bin
	}
	return sides, bins
}

// hasFlag reports whether bin's scan takes flag.
func hasFlag(bin, flag string) bool {
	out, _ := exec.Command(bin, "scan", "--help").CombinedOutput()
	return strings.Contains(string(out), flag)
}

// BenchmarkScanProcess: the built binary's `scan --once` over 20 k rows
// (PAYRECON_BENCH_ROWS), no added latency and no rate limit, the simulator
// in a process of its own, in retrieve and list mode: rows per second and
// CPU per verified row measured from outside. With PAYRECON_BENCH_BEFORE
// (the path of another build, e.g. of main) it alternates the two binaries
// PAYRECON_BENCH_PAIRS times (default 3) and reports each side's median and
// the ratio after ÷ before. With PAYRECON_BENCH_PROFILE_DIR each binary
// that has --cpu-profile writes a profile of its last run there
// (<side>-<mode>.prof, for go tool pprof). Each side first sweeps once
// unmeasured, so that both are measured in their steady state (a table
// already verified once).
//
//	PAYRECON_BENCH_BEFORE=/tmp/payrecon-main go test -run '^$' -bench ScanProcess -benchtime 1x -timeout 30m ./cmd/payrecon
func BenchmarkScanProcess(b *testing.B) {
	if testing.Short() {
		b.Skip("takes minutes")
	}
	sides, bins := benchSides(b)
	pairs := envInt("PAYRECON_BENCH_PAIRS", 3)
	profDir := os.Getenv("PAYRECON_BENCH_PROFILE_DIR")
	pb := newProcBench(b, envInt("PAYRECON_BENCH_ROWS", 20_000), 0, bins)
	modes := []string{"retrieve", "list"}
	if m := os.Getenv("PAYRECON_BENCH_MODES"); m != "" {
		modes = strings.Split(m, ",")
	}
	job := 0
	for _, mode := range modes {
		b.Run("mode="+mode, func(b *testing.B) {
			args := []string{"--mode", mode, "--rps", "0", "--concurrency", "16"}
			for _, s := range sides { // warm-up: the table verified once by each side
				job++
				pb.scan(b, s.bin, fmt.Sprintf("warm-%d", job), "", args...)
			}
			for b.Loop() {
				rates := map[string][]float64{}
				cpus := map[string][]float64{}
				for p := range pairs {
					order := slices.Clone(sides)
					if p%2 == 1 {
						slices.Reverse(order)
					}
					for _, s := range order {
						job++
						profile := ""
						if profDir != "" && p == pairs-1 && hasFlag(s.bin, "--cpu-profile") {
							profile = filepath.Join(profDir, s.name+"-"+mode+".prof")
						}
						load := loadAverage()
						r := pb.scan(b, s.bin, fmt.Sprintf("proc-%d", job), profile, args...)
						rates[s.name] = append(rates[s.name], r.rowsPerSec())
						cpus[s.name] = append(cpus[s.name], float64(r.cpuPerRow().Nanoseconds())/1e3)
						b.Logf("%s %s: %.0f rows/s, %.1f µs CPU per row, %d Stripe requests, wall %s, load %.2f",
							s.name, mode, r.rowsPerSec(), float64(r.cpuPerRow().Nanoseconds())/1e3, r.rep.StripeCalls,
							r.wall.Round(time.Millisecond), load)
					}
				}
				for _, s := range sides {
					b.ReportMetric(median(rates[s.name]), s.name+"-rows/s")
					b.ReportMetric(median(cpus[s.name]), s.name+"-µs-CPU/row")
				}
				if len(sides) == 2 {
					b.ReportMetric(median(rates["after"])/median(rates["before"]), "after/before-rows/s")
					b.ReportMetric(median(cpus["before"])/median(cpus["after"]), "before/after-CPU")
				}
				b.ReportMetric(loadAverage(), "load1")
			}
		})
	}
}

// BenchmarkScanBudget: the share of a 25 requests/s budget (--rps 25) the
// built binary's `scan --once` uses, the simulator in a process of its own
// answering each request after a fixed latency: list mode at 200 ms per
// request over 20 k rows (PAYRECON_BENCH_ROWS), retrieve mode at 50 ms over
// 1,000 rows (PAYRECON_BENCH_RETRIEVE_ROWS; one request per row, so 40 s).
// The share is the cycle's Stripe requests per second (from its own
// report, without the process's start) over the budget; list mode also
// reports verified rows per second measured from outside against the 2,500
// the budget allows (100 intents per request). With PAYRECON_BENCH_BEFORE
// the other build runs too, alternating.
//
//	PAYRECON_BENCH_BEFORE=/tmp/payrecon-main go test -run '^$' -bench ScanBudget -benchtime 1x -timeout 30m ./cmd/payrecon
func BenchmarkScanBudget(b *testing.B) {
	if testing.Short() {
		b.Skip("takes minutes")
	}
	sides, bins := benchSides(b)
	const rps = 25
	job := 0
	for _, c := range []struct {
		mode    string
		latency time.Duration
		rows    int
	}{
		{"list", 200 * time.Millisecond, envInt("PAYRECON_BENCH_ROWS", 20_000)},
		{"retrieve", 50 * time.Millisecond, envInt("PAYRECON_BENCH_RETRIEVE_ROWS", 1_000)},
	} {
		b.Run(fmt.Sprintf("mode=%s/latency=%s", c.mode, c.latency), func(b *testing.B) {
			pb := newProcBench(b, c.rows, c.latency, bins)
			for b.Loop() {
				for _, s := range sides {
					job++
					load := loadAverage()
					r := pb.scan(b, s.bin, fmt.Sprintf("budget-%d", job), "", "--mode", c.mode, "--rps", strconv.Itoa(rps))
					took := r.rep.Duration
					if took <= 0 {
						took = r.wall // a build whose report has no duration (before the fix of RunCycle's)
					}
					share := float64(r.rep.StripeCalls) / took.Seconds() / rps
					b.Logf("%s %s at %s: %d requests in %s: %.3f of the budget; %.0f rows/s from outside (wall %s), load %.2f",
						s.name, c.mode, c.latency, r.rep.StripeCalls, took.Round(time.Millisecond), share,
						r.rowsPerSec(), r.wall.Round(time.Millisecond), load)
					b.ReportMetric(share, s.name+"-budget-share")
					if c.mode == "list" {
						b.ReportMetric(r.rowsPerSec()/(rps*100), s.name+"-rows/s÷2500")
					}
				}
			}
		})
	}
}
