// Package pgtest gives each test its own PostgreSQL database, cloned from a
// template that carries every migration. The template is built once per
// migration set (its name includes a hash of the migrations) under an
// advisory lock, so test binaries of several packages running at once share
// it safely; cloning it takes tens of milliseconds.
//
// The server is DATABASE_URL, or postgres://postgres@127.0.0.1:5432/postgres
// when that is unset. The project's test script makes sure one answers.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgadmin"
	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
)

// DefaultURL is the server the tests use when DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the server's maintenance database.
func AdminURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewDB creates a fresh, migrated database for the test, drops it when the
// test ends, and returns a pool connected to it.
func NewDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("connect test database: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop registered by NewURL
	return pool
}

// NewURL creates a fresh, migrated database for the test, drops it when the
// test ends, and returns its connection URL (for code that opens its own
// connections, such as the built binary).
func NewURL(t testing.TB) string {
	t.Helper()
	u, drop, err := Create()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return u
}

// Create is NewURL outside a test (a TestMain, the fixture of an Example):
// it returns the fresh database's URL and the function that drops it.
func Create() (url string, drop func() error, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		return "", nil, fmt.Errorf("test database template: %w", templateErr)
	}
	name := pgadmin.RandomName("payrecon_test_")
	if err := pgadmin.CreateDatabase(ctx, AdminURL(), name, templateName); err != nil {
		return "", nil, fmt.Errorf("clone test database: %w", err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := pgadmin.DropDatabase(ctx, AdminURL(), name); err != nil {
			return fmt.Errorf("drop test database %s: %w", name, err)
		}
		return nil
	}
	return mustWithDatabase(name), drop, nil
}

func ensureTemplate(ctx context.Context) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "payrecon_tmpl_" + sum[:12]
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL at %s (set DATABASE_URL, or run scripts/test): %w", redact.URL(AdminURL()), err)
	}
	defer admin.Close(ctx)
	// One builder at a time across all test processes.
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7231946201)"); err != nil {
		return "", fmt.Errorf("lock template build: %w", err)
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(7231946201)") //nolint:errcheck
	var ready, exists bool
	err = admin.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	switch {
	case err == nil:
		exists = true
	case err == pgx.ErrNoRows:
	default:
		return "", fmt.Errorf("look up template: %w", err)
	}
	if exists && ready {
		return name, nil
	}
	if exists { // a half-built template from a crashed run
		if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return "", fmt.Errorf("drop half-built template: %w", err)
		}
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create template: %w", err)
	}
	pool, err := pgxpool.New(ctx, mustWithDatabase(name))
	if err != nil {
		return "", fmt.Errorf("connect template: %w", err)
	}
	_, err = postgres.Migrate(ctx, pool, nil)
	pool.Close()
	if err != nil {
		return "", fmt.Errorf("migrate template: %w", err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" IS_TEMPLATE true"); err != nil {
		return "", fmt.Errorf("mark template: %w", err)
	}
	return name, nil
}

// migrationsHash names the template after the migrations it carries, so a
// changed migration never reuses a stale template.
func migrationsHash() (string, error) {
	h := sha256.New()
	fsys := postgres.MigrationsFS()
	var names []string // every file, the Go migrations' statements too
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("list migrations: %w", err)
	}
	sort.Strings(names)
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", fmt.Errorf("read migration %s: %w", n, err)
		}
		h.Write([]byte(n))
		h.Write(b)
	}
	h.Write([]byte(strconv.Itoa(postgres.RiverSchemaVersion)))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// mustWithDatabase is the URL of database name on the test server.
func mustWithDatabase(name string) string {
	u, err := pgadmin.WithDatabase(AdminURL(), name)
	if err != nil {
		panic(fmt.Sprintf("pgtest: DATABASE_URL: %v", err))
	}
	return u
}
