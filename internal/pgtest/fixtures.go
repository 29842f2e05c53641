package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/sqlq"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// Payment is a payments row to insert. Zero times default to now.
type Payment struct {
	OrderID          string
	IntentID         string
	Status           payrecon.LocalStatus
	CreatedAt        time.Time
	UpdatedAt        time.Time
	LastReconciledAt *time.Time
}

// InsertPayments inserts rows with COPY and returns their ids in order.
func InsertPayments(t testing.TB, pool *pgxpool.Pool, ps []Payment) []int64 {
	t.Helper()
	ids, err := CopyPayments(context.Background(), pool, ps)
	if err != nil {
		t.Fatalf("insert %d payments: %v", len(ps), err)
	}
	return ids
}

// CopyPayments inserts rows with COPY and returns their ids in order.
func CopyPayments(ctx context.Context, pool *pgxpool.Pool, ps []Payment) ([]int64, error) {
	now := time.Now()
	var before int64
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM payments").Scan(&before); err != nil {
		return nil, fmt.Errorf("read max payment id: %w", err)
	}
	rows := make([][]any, len(ps))
	for i, p := range ps {
		if p.CreatedAt.IsZero() {
			p.CreatedAt = now
		}
		if p.UpdatedAt.IsZero() {
			p.UpdatedAt = p.CreatedAt
		}
		if p.OrderID == "" {
			p.OrderID = "order_" + p.IntentID
		}
		rows[i] = []any{p.OrderID, p.IntentID, string(p.Status), p.CreatedAt, p.UpdatedAt, p.LastReconciledAt}
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"payments"},
		[]string{"order_id", "stripe_payment_intent_id", "status", "created_at", "updated_at", "last_reconciled_at"},
		pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("copy payments: %w", err)
	}
	r, err := pool.Query(ctx, "SELECT id FROM payments WHERE id > $1 ORDER BY id", before)
	if err != nil {
		return nil, fmt.Errorf("read payment ids: %w", err)
	}
	ids, err := pgx.CollectRows(r, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read payment ids: %w", err)
	}
	if len(ids) != len(ps) {
		return nil, fmt.Errorf("inserted %d payments but found %d new ids (concurrent inserts?)", len(ps), len(ids))
	}
	return ids, nil
}

// Count runs a count(*) style query and returns its single integer.
func Count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Exec runs a statement or fails the test.
func Exec(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// CheckQueries prepares every statement of set on the test's database, so
// that a statement that no longer matches the schema, or does not parse,
// fails a test instead of a request.
func CheckQueries(t testing.TB, pool *pgxpool.Pool, set sqlq.Set) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, name := range set.Names() {
		sql, _, err := pgx.NamedArgs{}.RewriteQuery(ctx, conn.Conn(), set.Get(name), nil)
		if err != nil {
			t.Errorf("query %s: %v", name, err)
			continue
		}
		if strings.Count(strings.TrimSuffix(strings.TrimSpace(sql), ";"), ";") > 0 {
			continue // several simple statements (SET …; SET …): cannot be prepared
		}
		if _, err := conn.Conn().Prepare(ctx, "", sql); err != nil {
			t.Errorf("query %s does not prepare: %v", name, err)
		}
	}
}
