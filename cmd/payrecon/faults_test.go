package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"payrecon/internal/pgtest"
	"payrecon/sweep"
)

// runBinary runs the real binary with env (plus PATH) and a deadline, so
// that a hang is a failure rather than a stuck test: it returns the exit
// code, stdout and stderr.
func runBinary(t *testing.T, env map[string]string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
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
		{"findings", "show", strconv.FormatInt(fid, 10)},
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
