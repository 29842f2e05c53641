package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

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
