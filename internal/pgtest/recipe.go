package pgtest

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecipeDoc is the document whose SQL NewPaymentsViewURL runs, relative to
// the repository's root.
const RecipeDoc = "docs/payments-table.md"

// Markers, on the line before a SQL block of the recipe: a block the tests
// do not run, and one they run after migrating.
const (
	recipeSkip  = "<!-- not run by the test"
	recipeAfter = "<!-- run by the test after migrating"
)

// RecipeStatements returns the SQL statements of docs/payments-table.md, in
// order, split into statements at a semicolon that ends a line outside a $$
// body: those to run before migrating, and those to run after (blocks marked
// recipeAfter). Blocks marked recipeSkip are left out.
func RecipeStatements(tb testing.TB) (before, after []string) {
	tb.Helper()
	_, self, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", RecipeDoc))
	if err != nil {
		tb.Fatalf("read the recipe: %v", err)
	}
	var (
		cur          strings.Builder
		inBlock      bool
		skip, isLast bool
		dollar       bool
		prev         string
	)
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case !inBlock && strings.TrimSpace(line) == "```sql":
			inBlock = true
			skip = strings.HasPrefix(strings.TrimSpace(prev), recipeSkip)
			isLast = strings.HasPrefix(strings.TrimSpace(prev), recipeAfter)
		case inBlock && strings.TrimSpace(line) == "```":
			inBlock = false
			if s := strings.TrimSpace(cur.String()); s != "" && !skip {
				tb.Fatalf("recipe block ends without a semicolon: %q", s)
			}
			cur.Reset()
		case inBlock:
			if strings.Count(line, "$$")%2 == 1 {
				dollar = !dollar
			}
			cur.WriteString(line + "\n")
			if !dollar && strings.HasSuffix(strings.TrimSpace(line), ";") {
				switch {
				case skip:
				case isLast:
					after = append(after, strings.TrimSpace(cur.String()))
				default:
					before = append(before, strings.TrimSpace(cur.String()))
				}
				cur.Reset()
			}
		}
		prev = line
	}
	if len(before) == 0 || len(after) == 0 {
		tb.Fatalf("%s: %d statements to run before migrating, %d after", RecipeDoc, len(before), len(after))
	}
	return before, after
}

// NewPaymentsViewURL makes a fresh database with no payrecon schema in it,
// runs the recipe of docs/payments-table.md (the application's table
// shop.charges, payrecon's schema and the view payrecon.payments over it),
// and returns the database's URL with search_path set to payrecon's schema.
// Nothing is migrated: the caller runs `payrecon migrate` or
// postgres.Migrate.
func NewPaymentsViewURL(tb testing.TB) string {
	tb.Helper()
	u := NewEmptyURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	before, _ := RecipeStatements(tb)
	execAll(ctx, tb, conn, before)
	return WithSearchPath(tb, u, "payrecon")
}

// RunRecipeAfterMigrate runs the statements of the recipe meant for after
// `payrecon migrate` (its optional foreign keys) on the database at u.
func RunRecipeAfterMigrate(tb testing.TB, u string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	_, after := RecipeStatements(tb)
	execAll(ctx, tb, conn, after)
}

func execAll(ctx context.Context, tb testing.TB, conn *pgx.Conn, stmts []string) {
	tb.Helper()
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			tb.Fatalf("recipe statement failed: %v\n%s", err, s)
		}
	}
}

// NewEmptyURL makes a fresh database with nothing of payrecon's in it (its
// public schema emptied) and returns its URL.
func NewEmptyURL(tb testing.TB) string {
	tb.Helper()
	u := NewURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP SCHEMA public CASCADE; CREATE SCHEMA public"); err != nil {
		tb.Fatalf("empty the database: %v", err)
	}
	return u
}

// WithSearchPath returns the URL u with the connection's search_path set to
// path (a runtime parameter pgx sends when it connects).
func WithSearchPath(tb testing.TB, u, path string) string {
	tb.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("test database URL: %v", err)
	}
	q := parsed.Query()
	q.Set("search_path", path)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}
