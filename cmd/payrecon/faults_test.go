package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// runBinary runs the real binary with env (plus PATH) and a deadline, so
// that a hang is a failure rather than a stuck test: it returns the exit
// code, stdout and stderr.
func runBinary(t *testing.T, env map[string]string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	bin := binary(t) // built first: the build is not the process's time
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("payrecon %v did not exit within %s (killed)\nstdout:\n%s\nstderr:\n%s", args, timeout, out.String(), errb.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatalf("run payrecon %v: %v", args, err)
	return 0, "", ""
}

// A payments row with a NULL or an empty stripe_payment_intent_id once made
// `scan --once` panic while reading the batch and then hang in the deferred
// pool.Close. It must exit 0 with an invalid_local_row finding for each such
// row, the cursor must pass them (the cycle completes), and the rows after
// them are checked.
func TestScanOnceWithInvalidRowsExits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"paid", "succeeded"}, {"paid", "succeeded"}, {"pending", "succeeded"}, {"paid", "succeeded"}, {"paid", "succeeded"}})
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_payment_intent_id = NULL WHERE id = $1", ids[0])
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_payment_intent_id = '' WHERE id = $1", ids[1])

	code, out, errs := runBinary(t, b.env, 90*time.Second, "scan", "--once", "--batch", "2", "--rps", "0", "--mode", "retrieve")
	if code != 0 {
		t.Fatalf("scan --once exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM reconciliation_findings
		WHERE kind = 'invalid_local_row' AND verdict = 'needs_review' AND resolved_at IS NULL AND payment_id = ANY($1)`, ids[:2]); n != 2 {
		t.Errorf("%d open invalid_local_row findings, want 2", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL AND id = ANY($1)", ids[:2]); n != 0 {
		t.Errorf("%d invalid rows marked verified", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL AND id = ANY($1)", ids[2:]); n != 3 {
		t.Errorf("%d of the 3 valid rows verified", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND payment_id = $1", ids[2]); n != 1 {
		t.Error("the drift behind the invalid rows was not found")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_cursor WHERE job = $1 AND last_id = 0 AND last_cycle_completed_at IS NOT NULL", sweep.DefaultJob); n != 1 {
		t.Error("the cycle did not complete: the invalid rows held the cursor")
	}
}

// readOnlyDatabase makes every later session of the database at url read
// only, as a replica or a role with only SELECT would be.
func readOnlyDatabase(t *testing.T, url string) {
	t.Helper()
	pool := pgtestPool(t, url)
	var name string
	if err := pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET default_transaction_read_only = on")
}

// The read-only commands only read: they work on a read-only connection,
// and on a database that was never migrated they say so in one line (exit
// 2) and leave it as it was (goose's check used to create its table there).
func TestReadOnlyCommandsOnlyRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}, {"pending", "succeeded"}, {"paid", "canceled"}})
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0"); r.code != 0 {
		t.Fatalf("scan exit %d: %s", r.code, r.stderr)
	}
	var fid int64
	if err := pgtestPool(t, b.url).QueryRow(context.Background(), "SELECT min(id) FROM reconciliation_findings").Scan(&fid); err != nil {
		t.Fatal(err)
	}
	readOnlyDatabase(t, b.url)
	if n := pgtest.Count(t, pgtestPool(t, b.url), "SELECT count(*) FROM pg_settings WHERE name = 'default_transaction_read_only' AND setting = 'on'"); n != 1 {
		t.Fatal("the database is not read only")
	}
	for _, args := range [][]string{
		{"status"}, {"status", "--json"}, {"findings", "list"}, {"findings", "list", "--json"},
		{"findings", "show", strconv.FormatInt(fid, 10)}, {"plan", "--from-db"},
	} {
		if r := runCLI(t, b.env, args...); r.code != 0 {
			t.Errorf("%v on a read-only database: exit %d: %s", args, r.code, r.stderr)
		}
	}

	empty := pgtest.NewEmptyURL(t)
	env := map[string]string{"DATABASE_URL": empty}
	for _, args := range [][]string{{"status"}, {"findings", "list"}, {"findings", "show", "1"}} {
		r := runCLI(t, env, args...)
		if r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "payrecon migrate") {
			t.Errorf("%v on an unmigrated database: exit %d, stderr %q; want 2 and one line naming payrecon migrate", args, r.code, r.stderr)
		}
	}
	if n := pgtest.Count(t, pgtestPool(t, empty), "SELECT count(*) FROM pg_class WHERE relname = 'payrecon_schema_migrations'"); n != 0 {
		t.Error("a read-only command created payrecon_schema_migrations")
	}
}

// Input that makes no sense is refused in one line naming the flag, with
// exit 2, before anything is opened: never silently a default, "unlimited"
// or a later failure with another status.
func TestBadInputIsRefused(t *testing.T) {
	t.Parallel()
	// Unreachable: a check that is missing shows as another message.
	env := map[string]string{"DATABASE_URL": "postgres://payrecon@127.0.0.1:1/nothing?connect_timeout=1", "STRIPE_SECRET_KEY": "sk_test_x"}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"scan", "--once", "--rps", "NaN"}, want: "--rps must be a finite number"},
		{args: []string{"scan", "--once", "--rps", "Inf"}, want: "--rps must be a finite number"},
		{args: []string{"run", "--rps=-Inf"}, want: "--rps must be a finite number"},
		{args: []string{"scan", "--once", "--stripe-timeout=-1s"}, want: "--stripe-timeout must be positive"},
		{args: []string{"run", "--stripe-timeout=-1s"}, want: "--stripe-timeout must be positive"},
		{args: []string{"scan", "--once", "--max-outage=-5s"}, want: "--max-outage must be positive"},
		{args: []string{"scan", "--once", "--list-skew=-1m"}, want: "--list-skew must be positive"},
		{args: []string{"run", "--min-cycle=-1m"}, want: "--min-cycle must not be negative"},
		{args: []string{"run", "--workers", "0"}, want: "--workers must be positive"},
		{args: []string{"run", "--max-attempts", "0"}, want: "--max-attempts must be positive"},
		{args: []string{"run", "--http-max-conns", "0"}, want: "--http-max-conns must be positive"},
		{args: []string{"run"}, env: map[string]string{"PAYRECON_HTTP_MAX_CONNS": "-5"}, want: "--http-max-conns must be positive"},
		{args: []string{"relay", "--drain", "--workers", "0"}, want: "--workers must be positive"},
		{args: []string{"relay", "--drain", "--max-attempts=-1"}, want: "--max-attempts must be positive"},
		{args: []string{"scan", "--once", "--job", ""}, want: "--job must not be empty"},
		{args: []string{"run", "--job", " "}, want: "--job must not be empty"},
		{args: []string{"findings", "list", "--verdict", "bogus"}, want: `--verdict "bogus"`},
		{args: []string{"findings", "list", "--limit=-5"}, want: "--limit must be positive"},
		{args: []string{"findings", "list", "--older-than=-1h"}, want: "--older-than must not be negative"},
		{args: []string{"run", "--http-addr", "bogus"}, want: `--http-addr "bogus" is not host:port`},
		{args: []string{"run", "--http-addr", "127.0.0.1:99999"}, want: "the port must be a number"},
		{args: []string{"run", "--admin-addr", "localhost"}, want: "--admin-addr"},
		{args: []string{"plan", "--rows", "1000", "--rps", "NaN"}, want: "--rps must be a finite number"},
		{args: []string{"plan", "--rows", "1000", "--rps=-3"}, want: "--rps must not be negative"},
		{args: []string{"plan", "--rows=-1000", "--rps", "3"}, want: "--rows must not be negative"},
		{args: []string{"plan", "--rows", "1000", "--runs-per-hour", "1", "--growth", "NaN"}, want: "--growth must be a finite number"},
		{args: []string{"plan", "--rows", "1000", "--runs-per-hour", "Inf"}, want: "--runs-per-hour must be a finite number"},
		{args: []string{"plan", "--rows", "1000", "--runs-per-hour", "1", "--batch", "0"}, want: "--batch must be positive"},
		{args: []string{"plan", "--rows", "1000", "--rps", "3", "--rows-per-request", "0"}, want: "--rows-per-request must be positive"},
		{args: []string{"run", "--db-max-conns", "11"}, want: "--db-max-conns 11 is too few for run"},
		{args: []string{"relay", "--drain", "--db-max-conns", "4"}, want: "--db-max-conns 4 is too few for relay"},
		{args: []string{"status", "--db-max-conns", "0"}, want: "--db-max-conns must be positive"},
		{args: []string{"findings", "list"}, env: map[string]string{"PAYRECON_DB_MAX_CONNS": "0"}, want: "--db-max-conns must be positive"},
		{args: []string{"config"}, env: map[string]string{"STRIPE_WEBHOOK_SECRET": " , "}, want: "holds no secret"},
		{args: []string{"run"}, env: map[string]string{"STRIPE_WEBHOOK_SECRET": " , "}, want: "holds no secret"},
	}
	for _, c := range cases {
		e := map[string]string{}
		for k, v := range env {
			e[k] = v
		}
		for k, v := range c.env {
			e[k] = v
		}
		r := runCLI(t, e, c.args...)
		line := strings.TrimSpace(r.stderr)
		if r.code != 2 || !strings.Contains(line, c.want) || strings.Contains(line, "\n") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// A STRIPE_API_BASE with credentials in it is never printed as given:
// neither by `config` nor in `run`'s configuration log line.
func TestStripeAPIBaseRedacted(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL":    "postgres://payrecon@127.0.0.1:1/nothing?connect_timeout=1",
		"STRIPE_API_BASE": "https://sk_live_userpart:hunter2secret@stripe-proxy.example:8443/v1?token=qsecret",
	}
	for _, args := range [][]string{{"config"}, {"config", "--json"}, {"run", "--stripe-secret-key", "sk_test_x"}} {
		r := runCLI(t, env, args...)
		out := r.stdout + r.stderr
		for _, secret := range []string{"sk_live_userpart", "hunter2secret", "qsecret"} {
			if strings.Contains(out, secret) {
				t.Errorf("%v printed %q:\n%s", args, secret, out)
			}
		}
		if !strings.Contains(out, "stripe-proxy.example:8443") {
			t.Errorf("%v does not show the host:\n%s", args, out)
		}
	}
}

// findings list and show print what the database holds (reasons, notes,
// ids the application wrote) with control characters escaped: a finding
// cannot rewrite the operator's terminal.
func TestFindingsEscapeControlCharacters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"paid", "succeeded"}})
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, "UPDATE payments SET order_id = $2 WHERE id = $1", ids[0], "ord\x1b]0;pwned\x07")
	var fid int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO reconciliation_findings
		(payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status, reason, job, resolved_at, resolution, resolved_by, resolution_note)
		VALUES ($1, $2, 'unknown_status', 'needs_review', 'paid', $3, $4, 'j', now(), 'manual', $5, $6) RETURNING id`,
		ids[0], "pi_\x1b[2J", "succ\reeded", "why\x1b[31m red", "eve\u009b1m", "line1\nline2\tx").Scan(&fid); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"findings", "list", "--state", "all"}, {"findings", "show", strconv.FormatInt(fid, 10)}} {
		r := runCLI(t, b.env, args...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if strings.ContainsAny(r.stdout, "\x1b\x07\r\u009b") {
			t.Errorf("%v printed a raw control character:\n%q", args, r.stdout)
		}
		if !strings.Contains(r.stdout, `succ\reeded`) {
			t.Errorf("%v does not show the escaped Stripe status:\n%s", args, r.stdout)
		}
	}
	// payments show prints the same values, and the webhooks' and
	// transitions' references.
	pgtest.Exec(t, pool, `INSERT INTO payment_transitions (payment_id, from_status, to_status, version, source, source_ref, occurred_at)
		VALUES ($1, 'pending', 'paid', 1, 'manual', $2, now())`, ids[0], "op\x1b[8mhidden")
	r := runCLI(t, b.env, "payments", "show", strconv.FormatInt(ids[0], 10))
	if r.code != 0 || strings.ContainsAny(r.stdout, "\x1b\x07\r\u009b") {
		t.Errorf("payments show: exit %d, printed a raw control character:\n%q", r.code, r.stdout)
	}
	for _, want := range []string{`ord\x1b]0;pwned\a`, `op\x1b[8mhidden`, `eve\u009b1m`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("payments show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = runCLI(t, b.env, "findings", "show", strconv.FormatInt(fid, 10))
	for _, want := range []string{`why\x1b[31m red`, `line1\nline2\tx`, `eve\u009b1m`, `ord\x1b]0;pwned\a`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("findings show lacks %q:\n%s", want, r.stdout)
		}
	}
}

// The connection budget holds under load: `run` with --db-max-conns 12 and
// far more --workers than fit, sweeping 400 rows of which 200 need a repair
// (the workers busy), with /readyz polled meanwhile, never has more than 12
// connections open to its database (pg_stat_activity, scoped to this test's
// database), leases and River included.
func TestConnectionBudgetHolds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := make([][2]string, 400)
	for i := range rows {
		rows[i] = [2]string{"paid", "succeeded"}
		if i%2 == 0 {
			rows[i] = [2]string{"pending", "succeeded"}
		}
	}
	b.seed(t, rows)
	b.sim.SetFaults(stripesim.Faults{Latency: 2 * time.Millisecond})
	pool := pgtestPool(t, b.url)
	var db string
	if err := pool.QueryRow(context.Background(), "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	const budget = 12
	addr := freeAddr(t)
	p := startBinary(t, b.env, "run", "--db-max-conns", strconv.Itoa(budget), "--workers", "50", "--http-addr", addr, "--admin-addr", freeAddr(t),
		"--grace", "0", "--batch", "50", "--rps", "0", "--mode", "retrieve", "--concurrency", "16", "--min-cycle", "1h", "--recent", "72h", "--recent-interval", "1s")
	stop := make(chan struct{})
	defer close(stop)
	go func() { // readiness probes add their share
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if resp, err := c.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
			}
		}
	}()
	peak := 0
	testkit.WaitFor(t, "every repair applied", 2*time.Minute, func() bool {
		// application_name: only payrecon's, not this test's own pool.
		n := pgtest.Count(t, pool, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'payrecon run%'", db)
		peak = max(peak, n)
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE status = 'paid'") == len(rows)
	})
	if peak > budget {
		t.Errorf("peak of %d connections, budget %d", peak, budget)
	}
	if peak < 5 {
		t.Errorf("peak of %d connections: the sampling saw nothing of the load", peak)
	}
	if !strings.Contains(p.stderr.String(), "effective_workers=2") {
		t.Errorf("no warning that --workers 50 was lowered to fit the budget:\n%s", p.stderr.String())
	}
	t.Logf("peak %d connections of a budget of %d", peak, budget)
}

// A repair job held by a replica that dies (SIGKILL, mid-attempt) is applied
// by another within the documented bound: --repair-rescue-after plus
// rescueSlack (River's rescuer runs every 30 s on its leader, a rescued job
// waits for its retry backoff, 1 s after a first attempt, and River's
// scheduler makes it available within 5 s), and never before
// --repair-rescue-after (it is not taken from a live worker early).
func TestRepairRescueBoundAfterSIGKILL(t *testing.T) {
	t.Parallel()
	const rescueAfter = 9 * time.Second // each attempt is cut off at a third: 3 s to kill it mid-attempt
	b := setup(t)
	ids := b.seed(t, [][2]string{{"paid", "succeeded"}, {"pending", "succeeded"}, {"paid", "succeeded"}})
	pool := pgtestPool(t, b.url)
	ctx := context.Background()
	// The repair is queued (a River job, available) by a sweep that exits.
	if r := runCLI(t, b.env, "scan", "--once", "--grace", "0", "--rps", "0"); r.code != 0 {
		t.Fatalf("scan exit %d: %s", r.code, r.stderr)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair' AND state = 'available'"); n != 1 {
		t.Fatalf("%d repair jobs available, want 1", n)
	}
	// Hold the payment's row lock: the first process's repair attempt
	// blocks in the canonical writer, running, until the process dies.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // released below; a second rollback is a no-op
	if _, err := tx.Exec(ctx, "SELECT 1 FROM payments WHERE id = $1 FOR UPDATE", ids[1]); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--grace", "0", "--min-cycle", "1h", "--rps", "0", "--mode", "retrieve", "--workers", "2",
		"--repair-rescue-after", rescueAfter.String()}
	p1 := startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...)
	var attempted time.Time
	testkit.WaitFor(t, "the first process to start the repair", 60*time.Second, func() bool {
		err := pool.QueryRow(ctx, "SELECT attempted_at FROM river_job WHERE kind = 'payrecon_repair' AND state = 'running'").Scan(&attempted)
		return err == nil
	})
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if _, ok := p1.wait(t, 10*time.Second); !ok {
		t.Fatal("the killed process did not exit")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair' AND state = 'running'"); n != 1 {
		t.Fatalf("%d repair jobs running after the kill, want the dead one's 1 (was the attempt cut off before the kill?)", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...)
	testkit.WaitFor(t, "the survivor to apply the repair", rescueAfter+rescueSlack+30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid'", ids[1]) == 1
	})
	applied := time.Now()
	t.Logf("repair applied %s after the attempt started, %s after the kill (bound %s + %s)",
		applied.Sub(attempted).Round(100*time.Millisecond), applied.Sub(killed).Round(100*time.Millisecond), rescueAfter, rescueSlack)
	if d := applied.Sub(attempted); d > rescueAfter+rescueSlack {
		t.Errorf("applied %s after the attempt started, past the documented bound of %s + %s", d, rescueAfter, rescueSlack)
	}
	var rescuedAt time.Time
	if err := pool.QueryRow(ctx, "SELECT (errors[1]->>'at')::timestamptz FROM river_job WHERE kind = 'payrecon_repair'").Scan(&rescuedAt); err != nil {
		t.Fatalf("the rescue left no error on the job: %v", err)
	}
	if d := rescuedAt.Sub(attempted); d < rescueAfter {
		t.Errorf("rescued %s after the attempt started, before --repair-rescue-after %s", d, rescueAfter)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE version > 1"); n != 0 {
		t.Errorf("%d payments transitioned twice", n)
	}
}

// A panic with a connection checked out (as in the batch read that once
// dereferenced a NULL intent id) must crash, not hang: the deferred
// closePool does not wait for the connection during a panic, and the
// panic goes on with its own value.
func TestClosePoolDuringPanicDoesNotWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		defer closePool(pool)
		panic("boom")
	}()
	select {
	case r := <-done:
		if r != "boom" {
			t.Errorf("recovered %v, want the original panic", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("closePool waited for the checked-out connection during a panic")
	}
	conn.Release()
	pool.Close()
}
