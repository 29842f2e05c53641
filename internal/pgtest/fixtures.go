package pgtest

import (
	"context"
	"fmt"
	"slices"
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
// fails a test instead of a request. A file of several statements (SET …;
// SET …) has each prepared on its own.
func CheckQueries(t testing.TB, pool *pgxpool.Pool, set sqlq.Set) {
	t.Helper()
	stmts := map[string]string{}
	for _, name := range set.Names() {
		stmts[name] = set.Get(name)
	}
	CheckStatements(t, pool, stmts)
}

// CheckStatements prepares each statement (by name) on the test's
// database, each of a multi-statement string on its own; named parameters
// (@name) are rewritten as pgx does.
func CheckStatements(t testing.TB, pool *pgxpool.Pool, stmts map[string]string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	names := make([]string, 0, len(stmts))
	for name := range stmts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		parts := SplitStatements(stmts[name])
		if len(parts) == 0 {
			t.Errorf("query %s: no statement", name)
		}
		for i, part := range parts {
			sql, _, err := pgx.NamedArgs{}.RewriteQuery(ctx, conn.Conn(), part, nil)
			if err != nil {
				t.Errorf("query %s, statement %d: %v", name, i+1, err)
				continue
			}
			if _, err := conn.Conn().Prepare(ctx, "", sql); err != nil {
				t.Errorf("query %s, statement %d does not prepare: %v", name, i+1, err)
			}
		}
	}
}

// SplitStatements cuts SQL at the semicolons that end statements: not
// those inside quotes ('…', "…"), dollar quotes ($$…$$, $tag$…$tag$) or
// comments (-- …, /* … */). Parts holding only comments and space are
// dropped.
func SplitStatements(sql string) []string {
	var (
		out     []string
		start   int
		content bool // the current part has more than comments and space
	)
	for i := 0; i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			if j := strings.IndexByte(sql[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(sql)
			}
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			if j := strings.Index(sql[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(sql)
			}
		case c == '\'' || c == '"':
			content = true
			for i++; i < len(sql) && sql[i] != c; i++ {
			}
		case c == '$':
			content = true
			if tag, ok := dollarTag(sql[i:]); ok {
				if j := strings.Index(sql[i+len(tag):], tag); j >= 0 {
					i += len(tag) + j + len(tag) - 1
				} else {
					i = len(sql)
				}
			}
		case c == ';':
			if content {
				out = append(out, strings.TrimSpace(sql[start:i]))
			}
			start, content = i+1, false
		case c != ' ' && c != '\t' && c != '\n' && c != '\r':
			content = true
		}
	}
	if content {
		out = append(out, strings.TrimSpace(sql[start:]))
	}
	return out
}

// dollarTag returns the dollar-quote tag s starts with ($$ or $name$).
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '$':
			return s[:j+1], true
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || j > 1 && '0' <= c && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}
