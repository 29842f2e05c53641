package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
			"job": job, "lo": lo, "hi": hi, "read_min": at, "read_max": at, "row_count": int(hi - lo), "prune_before": pruneBefore,
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
