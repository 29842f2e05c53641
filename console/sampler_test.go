package console_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// The sampler: one row a minute however many replicas sample at once; the
// history buckets it for the charts. (Pruning by age is the pruner's:
// postgres/prune_test.go.)
func TestSampler(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	now := time.Date(2031, 5, 6, 7, 8, 30, 0, time.UTC)
	clock := testkit.NewClock(now)
	reader := postgres.NewConsoleReader(pool, postgres.ConsoleConfig{RepairKind: relay.Kind})
	old := now.Add(-3 * time.Hour)
	verified := now.Add(-90 * time.Minute)
	pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_s1", Status: "paid", CreatedAt: old, LastReconciledAt: &verified},
		{IntentID: "pi_s2", Status: "pending", CreatedAt: old}})
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_findings (payment_id, kind, verdict, local_status)
		SELECT id, 'missing_externally', 'needs_review', status FROM payments`)

	// Eight replicas sample the same minute at once: one row.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &console.Sampler{Store: reader, Clock: clock}
			if err := s.Tick(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_samples"); n != 1 {
		t.Fatalf("%d samples of one minute, want 1", n)
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM console_samples WHERE minute = '2031-05-06 07:08:00+00'
		AND lag_seconds = 3 * 3600 AND open_findings = 2 AND open_by_kind = '{"missing_externally": 2}'`); n != 1 {
		t.Error("the sample does not hold the minute's figures (lag from the unverified row, 2 open findings)")
	}

	pgtest.Exec(t, pool, `INSERT INTO console_samples (minute, lag_seconds, open_findings)
		SELECT $1::timestamptz - make_interval(mins => i), 60, 1 FROM generate_series(1, 100) i`, now.Truncate(time.Minute))
	// A minute later the next sample opens the third hourly bucket.
	clock.Advance(time.Minute)
	if err := (&console.Sampler{Store: reader, Clock: clock}).Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM console_samples"); n != 102 {
		t.Errorf("%d samples, want 102 (100 inserted, 2 sampled)", n)
	}

	// History: hourly buckets, the largest figure of each.
	pgtest.Exec(t, pool, "UPDATE console_samples SET lag_seconds = 36000 WHERE minute = $1", now.Truncate(time.Minute).Add(-30*time.Minute))
	hist, err := reader.History(ctx, now.Add(-2*time.Hour), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("%d buckets, want 3: %+v", len(hist), hist)
	}
	var top time.Duration
	for _, h := range hist {
		top = max(top, h.Lag)
	}
	if top != 10*time.Hour {
		t.Errorf("the largest lag of the history is %s, want 10h", top)
	}
}
