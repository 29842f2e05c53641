package demo

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgadmin"
	"github.com/payrecon/payrecon/internal/pgtest"
)

// The plan is a pure function of its inputs, gives every kind of drift at
// least a few rows at the smallest size, and lays rows out in time order.
func TestPlanIsDeterministicAndCoversEveryKind(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, n := range []int{MinPayments, 300, 10000} {
		a, err := newPlan(n, 7, now, SpanDefault)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newPlan(n, 7, now, SpanDefault)
		c, _ := newPlan(n, 8, now, SpanDefault)
		same, differs := true, false
		for i := range a.rows {
			same = same && a.rows[i] == b.rows[i]
			differs = differs || a.rows[i].role != c.rows[i].role || a.rows[i].intentID != c.rows[i].intentID
			if i > 0 && a.rows[i].created.Before(a.rows[i-1].created) {
				t.Fatalf("n=%d: row %d created before row %d", n, i, i-1)
			}
		}
		if !same || !differs {
			t.Errorf("n=%d: same seed same plan %v, other seed differs %v", n, same, differs)
		}
		for _, k := range payrecon.Kinds {
			if k == payrecon.KindInvalidLocalRow || k.IsConnectOnly() { // a fault, not a drift: the demo's table (NOT NULL UNIQUE ids) cannot hold two; a platform's kind
				continue
			}
			if got := a.injected()[k]; got < 2 {
				t.Errorf("n=%d: %s injected %d times, want at least 2", n, k, got)
			}
		}
		first, last := a.rows[0].created, a.rows[n-1].created
		for _, o := range a.orphans {
			if o.created.Before(first) || o.created.After(last) {
				t.Errorf("n=%d: orphan %s created %s outside the payments' span", n, o.intentID, o.created)
			}
		}
		total := 0
		for _, c := range a.counts {
			total += c
		}
		if total != n {
			t.Errorf("n=%d: roles cover %d rows", n, total)
		}
	}
	if _, err := newPlan(MinPayments-1, 1, now, SpanDefault); err == nil {
		t.Error("a plan below the minimum was accepted")
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// The whole scenario against the real service: everything injected is
// found, the repairable kinds are repaired, nothing else moves, and the
// database is dropped.
func TestRunFindsEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		last Progress
		seen int
	)
	rep, err := Run(ctx, pgtest.AdminURL(), Config{Payments: 300, Seed: 3, Logger: testLogger(t), Batch: 50,
		Progress: func(p Progress) { mu.Lock(); last, seen = p, seen+1; mu.Unlock() }})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !rep.OK() {
		t.Errorf("report not OK: %v\n%+v", rep.Problems(), rep)
	}
	for _, k := range rep.Kinds {
		if k.Kind == payrecon.KindInvalidLocalRow || k.Kind.IsConnectOnly() { // a fault, not a drift: not injected; a platform's kind
			continue
		}
		if k.Injected < 2 || k.Detected != k.Injected || k.Missed != 0 {
			t.Errorf("%s: %+v", k.Kind, k)
		}
		if k.Repairable && (k.Repaired != k.Injected || k.LeftForReview != 0) {
			t.Errorf("%s: repaired %d of %d, %d left open", k.Kind, k.Repaired, k.Injected, k.LeftForReview)
		}
		if !k.Repairable && k.LeftForReview != k.Injected {
			t.Errorf("%s: %d of %d left for review", k.Kind, k.LeftForReview, k.Injected)
		}
	}
	if rep.Sweep.Rows != 300 || rep.Sweep.StripeRequests == 0 || rep.Webhooks.Dropped == 0 || rep.Webhooks.Duplicated == 0 ||
		rep.Webhooks.Reordered == 0 || rep.Webhooks.Outcomes["duplicate"] != rep.Webhooks.Duplicated {
		t.Errorf("sweep %+v, webhooks %+v", rep.Sweep, rep.Webhooks)
	}
	if rep.InSyncRows == 0 || rep.ReviewRows == 0 {
		t.Errorf("in-sync rows %d, review rows %d", rep.InSyncRows, rep.ReviewRows)
	}
	// The shop heard every transition, some only on a retry, and fulfilled
	// each paid order once.
	if n := rep.Notifications; n.Transitions < 20 || n.Acknowledged != n.Transitions || n.RefusedFirst == 0 ||
		n.Redelivered < n.RefusedFirst || n.PaidOrders == 0 || n.FulfilledOnce != n.PaidOrders || n.BadSignatures != 0 {
		t.Errorf("notifications %+v", n)
	}
	mu.Lock()
	if seen == 0 || last.Phase != "drain" || last.Swept != 300 || last.Repaired != last.Repairs || last.Repairs == 0 {
		t.Errorf("last progress %+v after %d reports", last, seen)
	}
	mu.Unlock()
	if rep.Database == "" || databaseExists(t, rep.Database) {
		t.Errorf("demo database %q was not dropped", rep.Database)
	}
}

// The check can fail: rows touched behind the writer's back during the run
// are caught, and nothing else is blamed.
func TestRunCatchesTamperedRows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, pgtest.AdminURL(), Config{Payments: MinPayments, Seed: 5, Logger: testLogger(t), Keep: true, TamperInSync: 3})
	if rep.Database != "" {
		t.Cleanup(func() {
			if err := pgadmin.DropDatabase(context.Background(), pgtest.AdminURL(), rep.Database); err != nil {
				t.Error(err)
			}
		})
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if rep.OK() || rep.InSyncTouched != 3 || len(rep.Problems()) != 1 {
		t.Errorf("OK %v, in-sync touched %d, problems %v", rep.OK(), rep.InSyncTouched, rep.Problems())
	}
	if !rep.Kept || !databaseExists(t, rep.Database) || rep.DatabaseURL == "" {
		t.Errorf("--keep: kept %v, database %q exists %v, url %q", rep.Kept, rep.Database, databaseExists(t, rep.Database), rep.DatabaseURL)
	}
}

// Every statement in queries/ prepares against the migrated schema.
func TestQueriesPrepare(t *testing.T) {
	t.Parallel()
	pgtest.CheckQueries(t, pgtest.NewDB(t), queries)
}
