package sweep_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/sweep"
)

// brokenScan is the seed's anti-example, kept as evidence. DO NOT COPY: it
// looks at the 200 most recently updated rows, and since it never changes
// updated_at itself, it looks at the same 200 rows every hour, for ever.
func brokenScan(ctx context.Context, pool *pgxpool.Pool, gw payrecon.Gateway, batch int) (int, error) {
	rows, err := pool.Query(ctx, `SELECT id, stripe_payment_intent_id FROM payments ORDER BY updated_at DESC LIMIT $1`, batch)
	if err != nil {
		return 0, err
	}
	type r struct {
		id     int64
		intent string
	}
	var got []r
	for rows.Next() {
		var x r
		if err := rows.Scan(&x.id, &x.intent); err != nil {
			return 0, err
		}
		got = append(got, x)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, x := range got {
		_, _ = gw.RetrieveIntent(ctx, x.intent)
		if _, err := pool.Exec(ctx, "UPDATE payments SET last_reconciled_at = now() WHERE id = $1", x.id); err != nil {
			return 0, err
		}
	}
	return len(got), nil
}

// The seed's test: 500 rows, 10 hourly runs of the broken scan, and exactly
// 300 rows are never checked. Beside it, the cursor sweep on the same data
// checks all 500 within ceil(500/200) = 3 batches, and the 4th call wraps.
func TestBrokenScanStarvesOldRowsCursorSweepDoesNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := func() *testBundle {
		b := setup(t, nil)
		base := time.Now().Add(-48 * time.Hour)
		ps := make([]pgtest.Payment, 500)
		for i := range ps {
			id := fmt.Sprintf("pi_%d", i+1)
			// distinct update times, as a live table has
			ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: base, UpdatedAt: base.Add(time.Duration(i) * time.Minute)}
			b.gw.set(id, payrecon.IntentSucceeded)
		}
		b.ids = pgtest.InsertPayments(t, b.pool, ps)
		return b
	}

	broken := seed()
	for hour := 0; hour < 10; hour++ {
		if _, err := brokenScan(ctx, broken.pool, broken.gw, 200); err != nil {
			t.Fatal(err)
		}
	}
	if never := broken.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); never != 300 {
		t.Errorf("broken scan: %d rows never checked, the seed's evidence says 300", never)
	}

	cursor := seed()
	s := cursor.sweeper(sweep.Config{Batch: 200})
	batches := 0
	for {
		rep, err := s.RunBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Wrapped {
			break
		}
		batches++
	}
	if batches != 3 {
		t.Errorf("cursor sweep took %d batches before the wrap, want ceil(500/200) = 3", batches)
	}
	if never := cursor.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); never != 0 {
		t.Errorf("cursor sweep: %d rows never checked", never)
	}
}
