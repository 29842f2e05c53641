package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// The verified ranges (migration 00026) of a job partition the ids it
// covers: a new batch's range replaces what it overlaps of the older ones,
// cutting one that holds it whole in two, and keeps each piece's read times.
func TestVerifiedRangesReplaceWhatTheyOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	record := func(job string, lo, hi int64, minute int, pruneBefore *time.Time) {
		t.Helper()
		at := base.Add(time.Duration(minute) * time.Minute)
		if _, err := pool.Exec(ctx, postgres.Queries.Get("record_verified_range"), pgx.StrictNamedArgs{
			"job": job, "lo": lo, "hi": hi, "read_min": at, "read_max": at, "row_count": int(hi - lo), "prune_before": pruneBefore, "range_account": (*string)(nil),
		}); err != nil {
			t.Fatal(err)
		}
	}
	ranges := func(job string) string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT lower(ids) - 1, upper(ids) - 1, extract(epoch FROM read_min - $2)::int / 60
			FROM reconciliation_verified_ranges WHERE job = $1 ORDER BY lower(ids)`, job, base)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for rows.Next() {
			var lo, hi, m int64
			if err := rows.Scan(&lo, &hi, &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("(%d,%d]@%d", lo, hi, m))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
	// A cycle of three batches, then the next cycle's batches replace them
	// as they pass, of other sizes.
	record("a", 0, 100, 1, nil)
	record("a", 100, 200, 2, nil)
	record("a", 200, 300, 3, nil)
	record("b", 0, 300, 9, nil) // another job's ranges are its own
	record("a", 0, 150, 10, nil)
	if got, want := ranges("a"), "(0,150]@10 (150,200]@2 (200,300]@3"; got != want {
		t.Errorf("after (0,150]: %s, want %s", got, want)
	}
	record("a", 150, 160, 11, nil)
	record("a", 160, 320, 12, nil)
	if got, want := ranges("a"), "(0,150]@10 (150,160]@11 (160,320]@12"; got != want {
		t.Errorf("after the cycle: %s, want %s", got, want)
	}
	// A range inside another cuts it in two; the pieces keep their times.
	record("a", 20, 30, 13, nil)
	if got, want := ranges("a"), "(0,20]@10 (20,30]@13 (30,150]@10 (150,160]@11 (160,320]@12"; got != want {
		t.Errorf("after a range inside one: %s, want %s", got, want)
	}
	if got, want := ranges("b"), "(0,300]@9"; got != want {
		t.Errorf("job b: %s, want %s", got, want)
	}
	// A window job prunes its ranges read before prune_before.
	cut := base.Add(12 * time.Minute)
	record("a", 400, 410, 14, &cut)
	if got, want := ranges("a"), "(20,30]@13 (160,320]@12 (400,410]@14"; got != want {
		t.Errorf("after pruning: %s, want %s", got, want)
	}
	// The wrap drops what lies past the end of the cycle.
	if _, err := pool.Exec(ctx, postgres.Queries.Get("wrap_verified_ranges"), pgx.StrictNamedArgs{"job": "a", "from": int64(320)}); err != nil {
		t.Fatal(err)
	}
	if got, want := ranges("a"), "(20,30]@13 (160,320]@12"; got != want {
		t.Errorf("after the wrap at 320: %s, want %s", got, want)
	}
	if got := ranges("b"); !slices.Contains(strings.Fields(got), "(0,300]@9") {
		t.Errorf("job b's wrap-free ranges changed: %s", got)
	}
}

// Connect: each account's job reads only that account's rows, whose ids
// interleave with the others', so one account's verified ranges span rows
// of another. The guard against older answers compares only ranges of the
// same account: account B's newer batch does not make account A's answers
// stale, while a second job of account A does.
func TestVerifiedRangesGuardOnlyTheirAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, col := setupAccounts(t)
	commit := func(s *postgres.Store, job string, cur payrecon.Cursor, rows []payrecon.PaymentRow) payrecon.CommitResult {
		t.Helper()
		checks := make([]payrecon.Check, len(rows))
		for i, r := range rows {
			checks[i] = payrecon.Check{Row: r, Observed: payrecon.IntentSucceeded, ReadAt: cur.ReadAt,
				Decision: payrecon.Classify(r.Status, payrecon.IntentSucceeded)}
		}
		res, err := s.CommitBatch(ctx, payrecon.BatchCommit{Job: job, From: cur.LastID, To: rows[len(rows)-1].ID, Advance: true,
			Checks: checks, Now: time.Now(), VerifiedRefresh: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	read := func(s *postgres.Store, job string) (payrecon.Cursor, []payrecon.PaymentRow) {
		t.Helper()
		cur, rows, _, err := s.ReadBatch(ctx, job, 10, 0, time.Now())
		if err != nil || len(rows) == 0 {
			t.Fatalf("read %s: %d rows, %v", job, len(rows), err)
		}
		return cur, rows
	}
	store := postgres.NewStore(b.pool)
	a, bb := store.ForAccount(col, "acct_A"), store.ForAccount(col, "acct_B")
	jobA, jobB := payrecon.AccountJob("sweep", "acct_A"), payrecon.AccountJob("sweep", "acct_B")
	curA, rowsA := read(a, jobA) // account A's answers, read first
	curB, rowsB := read(bb, jobB)
	if res := commit(bb, jobB, curB, rowsB); res.Verified != len(rowsB) {
		t.Fatalf("account B: %+v", res)
	}
	if res := commit(a, jobA, curA, rowsA); res.Verified != len(rowsA) || len(res.Stale) != 0 {
		t.Errorf("account A's batch after account B's newer one: %+v; want every row verified (B's range is not A's)", res)
	}
	// A second job over account A's rows, read later and committed first,
	// does make the first job's older answers stale.
	curOld, rowsOld := read(a, jobA+"-old")
	curNew, rowsNew := read(a, jobA+"-new")
	if res := commit(a, jobA+"-new", curNew, rowsNew); res.Verified != len(rowsNew) {
		t.Fatalf("the newer job: %+v", res)
	}
	if res := commit(a, jobA+"-old", curOld, rowsOld); res.Verified != 0 || len(res.Stale) != len(rowsOld) {
		t.Errorf("the older answers of the same account: %+v; want none verified, all stale", res)
	}
}
