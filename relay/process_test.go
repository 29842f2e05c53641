package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// The multi-process tests re-execute this test binary as relay processes
// (the standard helper-process pattern): helperRole selects the role and
// helperDB passes the database URL.
const (
	helperRole    = "PAYRECON_RELAY_HELPER"
	helperDB      = "PAYRECON_RELAY_HELPER_DB"
	helperWorkers = "PAYRECON_RELAY_HELPER_WORKERS"
	// helperCooldown, when set, is the drainer's FetchCooldown.
	helperCooldown = "PAYRECON_RELAY_HELPER_FETCH_COOLDOWN"
	// helperNotifyURL, for role "notify", is the receiver's URL.
	helperNotifyURL = "PAYRECON_RELAY_HELPER_NOTIFY_URL"
	// helperAppName is the application_name of the helpers' connections.
	helperAppName = "payrecon_relay_helper"
)

// TestHelperProcess is not a test: run as a child with helperRole set, it
// drains the repairs queue of the database at helperDB and prints its
// DrainReport as JSON on stdout. Role "drain" uses the tests' quick retries
// and rescue; role "bench" the production defaults.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperRole)
	if role == "notify" {
		helperNotify()
		return
	}
	if role != "drain" && role != "drain-patient" && role != "bench" {
		return
	}
	workers, _ := strconv.Atoi(env(helperWorkers, "20"))
	cooldown, _ := time.ParseDuration(env(helperCooldown, "0s"))
	err := func() error {
		ctx := context.Background()
		cfg, err := pgxpool.ParseConfig(os.Getenv(helperDB))
		if err != nil {
			return err
		}
		cfg.MaxConns = int32(workers + 5)
		cfg.ConnConfig.RuntimeParams["application_name"] = helperAppName
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer pool.Close()
		rc := relay.Config{
			Workers:       workers,
			FetchCooldown: cooldown,
			Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}
		switch role {
		case "drain":
			// Short timeouts, so that River rescues a killed
			// process's jobs within the test.
			rc.RetryPolicy = quickRetries{}
			rc.FetchPollInterval = 100 * time.Millisecond
			rc.JobTimeout = time.Second
			rc.RescueStuckJobsAfter = 2 * time.Second
			rc.DrainPollInterval = 10 * time.Millisecond
		case "drain-patient":
			// Nobody is killed: a job timeout that a loaded machine
			// under the race detector never reaches, so that every
			// failed attempt the test sees is a real one.
			rc.RetryPolicy = quickRetries{}
			rc.FetchPollInterval = 100 * time.Millisecond
			rc.DrainPollInterval = 10 * time.Millisecond
		}
		r, err := relay.New(pool, postgres.NewWriter(nil), rc)
		if err != nil {
			return err
		}
		rep, err := r.Drain(ctx)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(rep)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// drainer is a relay process started from the test binary.
type drainer struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startDrainer(t testing.TB, role, url string, workers int) *drainer {
	t.Helper()
	d := &drainer{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
	d.cmd.Env = append(os.Environ(), helperRole+"="+role, helperDB+"="+url, helperWorkers+"="+strconv.Itoa(workers))
	if c := os.Getenv("PAYRECON_BENCH_FETCH_COOLDOWN"); c != "" {
		d.cmd.Env = append(d.cmd.Env, helperCooldown+"="+c)
	}
	d.cmd.Stdout, d.cmd.Stderr = &d.stdout, &d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			_ = d.cmd.Wait()
		}
	})
	return d
}

// wait waits for the process to exit and returns its report.
func (d *drainer) wait() (relay.DrainReport, error) {
	var rep relay.DrainReport
	if err := d.cmd.Wait(); err != nil {
		return rep, fmt.Errorf("drainer: %v\nstderr:\n%s", err, d.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(d.stdout.String()), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "{") {
			return rep, json.Unmarshal([]byte(lines[i]), &rep)
		}
	}
	return rep, fmt.Errorf("drainer printed no report:\n%s\nstderr:\n%s", d.stdout.String(), d.stderr.String())
}

// seedQueued seeds n enqueued repair commands through an insert-only relay
// (as `scan --once` would) and installs the apply-once audit.
func seedQueued(t testing.TB, n int) *testBundle {
	t.Helper()
	b := seedQueuedNoAudit(t, n)
	installAudit(t, b.pool)
	return b
}

// seedQueuedNoAudit is seedQueued without the audit trigger, whose extra
// insert per command a benchmark must not pay.
func seedQueuedNoAudit(t testing.TB, n int) *testBundle {
	t.Helper()
	cfg := testConfig(t)
	cfg.InsertOnly = true
	cfg.MaxAttempts = 0 // the default
	b := setup(t, cfg)
	b.seedRepairs(t, n, true)
	return b
}

// Two processes drain 10 k commands in parallel: each command is applied
// once, and both processes take part.
func TestTwoProcessesDrainInParallel(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("10 k commands in two processes")
	}
	const n = 10_000
	b := seedQueued(t, n)
	ds := []*drainer{startDrainer(t, "drain-patient", b.url, 10), startDrainer(t, "drain-patient", b.url, 10)}
	reps := make([]relay.DrainReport, len(ds))
	var (
		wg   sync.WaitGroup
		errs = make([]error, len(ds))
	)
	for i, d := range ds {
		wg.Go(func() { reps[i], errs[i] = d.wait() })
	}
	wg.Wait()
	total := 0
	for i := range ds {
		if errs[i] != nil {
			t.Fatalf("drainer %d: %v", i, errs[i])
		}
		if reps[i].Applied == 0 {
			t.Errorf("drainer %d applied nothing: %+v", i, reps[i])
		}
		if reps[i].AlreadyDone+reps[i].Failed+reps[i].DeadLettered+reps[i].Unapplied != 0 {
			t.Errorf("drainer %d: %+v", i, reps[i])
		}
		total += reps[i].Applied
	}
	if total != n {
		t.Errorf("the drainers applied %d commands, want %d", total, n)
	}
	checkAppliedOnce(t, b.pool, n)
	t.Logf("drainer reports: %+v, %+v", reps[0], reps[1])
}

// A relay process killed (SIGKILL) in the middle of a drain: its commands in
// flight roll back, River rescues the jobs it held, and a fresh drain applies
// everything left, each command once.
func TestKilledDrainerCommandsAreAppliedOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills a relay process and waits for River's rescuer")
	}
	const n = 10_000
	b := seedQueued(t, n)
	// The fresh drain below rescues the victim's jobs whatever the victim's
	// own timeouts were.
	victim := startDrainer(t, "drain-patient", b.url, 20)
	processed := func() int {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE processed_at IS NOT NULL")
	}
	testkit.WaitFor(t, "the victim to apply some commands", 2*time.Minute, func() bool { return processed() >= n/10 })
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	// A COMMIT the victim sent just before it died still completes: count
	// once its server sessions are gone.
	testkit.WaitFor(t, "the victim's sessions to end", time.Minute, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1", helperAppName) == 0
	})
	atKill := processed()
	if atKill >= n {
		t.Fatalf("the victim applied all %d commands before it was killed; nothing to recover", n)
	}
	stuck := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE state = 'running'")
	t.Logf("killed the victim after %d of %d commands; %d jobs left running", atKill, n, stuck)

	cfg := testConfig(t)
	cfg.Workers = 20
	cfg.JobTimeout = time.Second
	cfg.RescueStuckJobsAfter = 2 * time.Second
	r, err := relay.New(newPool(t, b.url, 25), postgres.NewWriter(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := r.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != n-atKill || rep.AlreadyDone != 0 || rep.DeadLettered != 0 {
		t.Errorf("fresh drain %+v, want %d applied and nothing else", rep, n-atKill)
	}
	checkAppliedOnce(t, b.pool, n)
	t.Logf("fresh drain: %+v", rep)
}
