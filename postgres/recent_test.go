package postgres_test

import (
	"context"
	"encoding/json"
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

// The recent window's read is an index range on payments_created_at, never
// a scan of payments, whatever the cursor.
func TestRecentBatchReadsAnIndexRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	now := time.Now()
	ps := make([]pgtest.Payment, 20000)
	for i := range ps {
		created := now.Add(-time.Duration(len(ps)-i) * time.Minute) // two weeks, oldest first
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_%06d", i), Status: payrecon.StatusPaid, CreatedAt: created}
	}
	ids := pgtest.InsertPayments(t, pool, ps)
	if _, err := pool.Exec(ctx, "ANALYZE payments"); err != nil {
		t.Fatal(err)
	}
	job := "j" + payrecon.RecentJobSuffix
	if _, err := pool.Exec(ctx, "INSERT INTO reconciliation_cursor (job, cycle_started_at) VALUES ($1, now())", job); err != nil {
		t.Fatal(err)
	}
	for _, cursor := range []int64{0, ids[len(ids)-50]} {
		if _, err := pool.Exec(ctx, "UPDATE reconciliation_cursor SET last_id = $1 WHERE job = $2", cursor, job); err != nil {
			t.Fatal(err)
		}
		var plan []map[string]any
		sql := "EXPLAIN (FORMAT JSON) " + postgres.Queries.Get("read_recent_batch")
		args := map[string]any{"job": job, "limit": 200, "since": now.Add(-72 * time.Hour)}
		if err := pool.QueryRow(ctx, sql, pgx.NamedArgs(args)).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(plan)
		text := string(b)
		var seq []string
		walkPlan(plan[0]["Plan"], func(n map[string]any) {
			if n["Node Type"] == "Seq Scan" {
				seq = append(seq, fmt.Sprint(n["Relation Name"]))
			}
		})
		if slices.Contains(seq, "payments") {
			t.Fatalf("cursor %d: the recent batch scans payments:\n%s", cursor, text)
		}
		if !strings.Contains(text, `"Index Name":"payments_created_at"`) {
			t.Fatalf("cursor %d: the recent batch does not use payments_created_at:\n%s", cursor, text)
		}
	}

	// And it returns the window's rows in creation order from the cursor.
	store := postgres.NewStore(pool).Recent(72 * time.Hour)
	_, rows, _, err := store.ReadBatch(ctx, job, 10, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 10 || rows[0].ID != ids[len(ids)-50]+1 {
		t.Fatalf("read %d rows from cursor %d, first %d; want 10 from %d", len(rows), ids[len(ids)-50], rows[0].ID, ids[len(ids)-50]+1)
	}
}

// walkPlan calls f on every node of an EXPLAIN (FORMAT JSON) plan.
func walkPlan(node any, f func(map[string]any)) {
	n, ok := node.(map[string]any)
	if !ok {
		return
	}
	f(n)
	if subs, ok := n["Plans"].([]any); ok {
		for _, s := range subs {
			walkPlan(s, f)
		}
	}
}
