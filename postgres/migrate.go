package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/payrecon/payrecon/internal/sqlq"
)

// migrationFiles are goose's SQL migrations (migrations/*.sql) and, in a
// folder named after it, the statements of the Go migration that applies
// only when payments is a plain table (paymentsIndexesMigration), one
// statement per file. goose reads only the top folder.
//
//go:embed migrations/*.sql migrations/00005_payments_indexes/*.sql
var migrationFiles embed.FS

// RiverSchemaVersion is the River migration version payrecon's schema is
// pinned to. Raising it is a new goose migration, never an edit of an old one.
const RiverSchemaVersion = 8

// riverMigrationVersion is the goose version of the migration that brings in
// River's tables.
const riverMigrationVersion = 3

// paymentsIndexesVersion is the goose version of the migration that indexes
// payments (a Go migration: see paymentsIndexesMigration).
const paymentsIndexesVersion = 5

// paymentsIndexesSource names migration 00005 in MigrationResult.Source.
const paymentsIndexesSource = "00005_payments_indexes/ (Go: only when payments is a table)"

// MigrationsFS returns the embedded migrations (for tests and tooling): the
// SQL migrations at the top, and the statements of Go migration 00005 in
// its folder.
func MigrationsFS() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder exists
	}
	return sub
}

// migrationsTable is goose's version table.
const migrationsTable = "payrecon_schema_migrations"

// provider builds a goose provider over the embedded migrations plus the Go
// migration that runs River's migrator. River's migrations run outside a
// goose transaction: some of them change enums, which fails inside one.
func provider(pool *pgxpool.Pool, logger *slog.Logger) (*goose.Provider, *sql.DB, error) {
	db := stdlib.OpenDBFromPool(pool)
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("create migration locker: %w", err)
	}
	river := goose.NewGoMigration(riverMigrationVersion,
		&goose.GoFunc{RunDB: func(ctx context.Context, _ *sql.DB) error {
			return migrateRiver(ctx, pool, logger, rivermigrate.DirectionUp, RiverSchemaVersion)
		}},
		&goose.GoFunc{RunDB: func(ctx context.Context, _ *sql.DB) error {
			return migrateRiver(ctx, pool, logger, rivermigrate.DirectionDown, -1)
		}},
	)
	p, err := goose.NewProvider(goose.DialectPostgres, db, MigrationsFS(),
		goose.WithGoMigrations(river, paymentsIndexesMigration(pool, logger)),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSessionLocker(locker),
		goose.WithTableName(migrationsTable),
	)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("create migration provider: %w", err)
	}
	return p, db, nil
}

func migrateRiver(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, dir rivermigrate.Direction, target int) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("create river migrator: %w", err)
	}
	if _, err := m.Migrate(ctx, dir, &rivermigrate.MigrateOpts{TargetVersion: target}); err != nil {
		return fmt.Errorf("river migrate %s to %d: %w", dir, target, err)
	}
	return nil
}

// paymentsIndexesMigration is migration 00005: the two indexes payrecon
// builds on payments. It was a SQL migration; it is a Go migration since
// 00013 so that it can run its statements only when payments is a plain
// table: a view (docs/payments-table.md) cannot carry an index, and
// PostgreSQL cannot build one CONCURRENTLY on a partitioned table; on those
// the application indexes its own table. Its statements are those of the
// SQL file it replaced, each run on its own outside a transaction (CREATE
// INDEX CONCURRENTLY cannot run in one), so an installation that applied
// the old file, and a table migrated now, end up the same.
func paymentsIndexesMigration(pool *pgxpool.Pool, logger *slog.Logger) *goose.Migration {
	stmts := sqlq.New("postgres/migrations/00005", migrationFiles, "migrations/00005_payments_indexes")
	run := func(prefix string) func(ctx context.Context, _ *sql.DB) error {
		return func(ctx context.Context, _ *sql.DB) error {
			kind, err := paymentsRelkind(ctx, pool)
			if err != nil {
				return err
			}
			if kind != relkindTable {
				if logger != nil {
					logger.Info("migrate: payments is not a plain table; payrecon builds no index on it (index the application's table: docs/payments-table.md)",
						slog.String("relkind", kind))
				}
				return nil
			}
			names := stmts.Names()
			sort.Strings(names)
			for _, name := range names {
				if !strings.HasPrefix(name, prefix) {
					continue
				}
				if _, err := pool.Exec(ctx, stmts.Get(name)); err != nil {
					return fmt.Errorf("migration 00005 %s: %w", name, err)
				}
			}
			return nil
		}
	}
	return goose.NewGoMigration(paymentsIndexesVersion,
		&goose.GoFunc{RunDB: run("up_")}, &goose.GoFunc{RunDB: run("down_")})
}

// MigrationResult is one applied migration.
type MigrationResult struct {
	Version int64  `json:"version"`
	Source  string `json:"source"`
}

// Migrate applies every pending migration. It is idempotent, and safe to run
// from several processes at once: a session-level advisory lock serialises
// them. It first checks that payments (a table, or a view standing in for
// one) has the shape payrecon needs (CheckPaymentsShape), and changes
// nothing when it has not.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) ([]MigrationResult, error) {
	if err := CheckPaymentsShape(ctx, pool); err != nil {
		return nil, err
	}
	p, db, err := provider(pool, logger)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := p.Up(ctx)
	out := make([]MigrationResult, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			src := r.Source.Path
			if r.Source.Version == paymentsIndexesVersion && src == "" {
				src = paymentsIndexesSource
			}
			out = append(out, MigrationResult{Version: r.Source.Version, Source: src})
		}
	}
	if err != nil {
		return out, fmt.Errorf("apply migrations: %w", err)
	}
	return out, nil
}

// ErrMigrationsPending says the database schema is behind the binary.
var ErrMigrationsPending = errors.New("migrations pending: run `payrecon migrate`")

// ErrNotMigrated says the database has none of payrecon's schema: `payrecon
// migrate` was never run against it (or against another database or
// search_path). It wraps ErrMigrationsPending.
var ErrNotMigrated = fmt.Errorf("the database was never migrated: %w", ErrMigrationsPending)

// CheckMigrations returns nil when every migration this binary knows is
// applied, and an error wrapping ErrMigrationsPending otherwise
// (ErrNotMigrated when none is). It only reads, so it works on a read-only
// connection and leaves an unmigrated database as it found it (goose's own
// check would create its version table).
func CheckMigrations(ctx context.Context, pool *pgxpool.Pool) error {
	var exists bool
	if err := pool.QueryRow(ctx, queries.Get("relation_exists"), pgx.StrictNamedArgs{"name": migrationsTable}).Scan(&exists); err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if !exists {
		return ErrNotMigrated
	}
	rows, err := pool.Query(ctx, queries.Get("migrations_applied"))
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	applied := make(map[int64]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	p, db, err := provider(pool, nil) // only to list the known migrations: no query
	if err != nil {
		return err
	}
	defer db.Close()
	for _, src := range p.ListSources() {
		if !applied[src.Version] {
			return fmt.Errorf("migration %d not applied: %w", src.Version, ErrMigrationsPending)
		}
	}
	return nil
}
