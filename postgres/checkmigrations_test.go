package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// CheckMigrations (status, findings, /readyz) only reads: on a database
// that was never migrated it says so and creates nothing; on a read-only
// session it works; a missing version is pending.
func TestCheckMigrationsOnlyReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	empty, err := pgxpool.New(ctx, pgtest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if err := postgres.CheckMigrations(ctx, empty); !errors.Is(err, postgres.ErrNotMigrated) || !errors.Is(err, postgres.ErrMigrationsPending) {
		t.Errorf("unmigrated database: %v, want ErrNotMigrated", err)
	}
	if n := pgtest.Count(t, empty, "SELECT count(*) FROM pg_class WHERE relname = 'payrecon_schema_migrations'"); n != 0 {
		t.Error("CheckMigrations created the version table")
	}

	pool := pgtest.NewDB(t)
	var name string
	if err := pool.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET default_transaction_read_only = on")
	ro, err := pgxpool.New(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n := pgtest.Count(t, ro, "SELECT count(*) FROM pg_settings WHERE name = 'transaction_read_only' AND setting = 'on'"); n != 1 {
		t.Fatal("the new session is not read only")
	}
	if err := postgres.CheckMigrations(ctx, ro); err != nil {
		t.Errorf("read-only session of a migrated database: %v", err)
	}
	pgtest.Exec(t, pool, "BEGIN READ WRITE; DELETE FROM payrecon_schema_migrations WHERE version_id = 13; COMMIT")
	if err := postgres.CheckMigrations(ctx, ro); !errors.Is(err, postgres.ErrMigrationsPending) || errors.Is(err, postgres.ErrNotMigrated) {
		t.Errorf("version 13 missing: %v, want ErrMigrationsPending", err)
	}
}
