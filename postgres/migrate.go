package postgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// RiverSchemaVersion is the River migration version payrecon's schema is
// pinned to. Raising it is a new goose migration, never an edit of an old one.
const RiverSchemaVersion = 8

// riverMigrationVersion is the goose version of the migration that brings in
// River's tables.
const riverMigrationVersion = 3

// MigrationsFS returns the embedded SQL migrations (for tests and tooling).
func MigrationsFS() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder exists
	}
	return sub
}

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
		goose.WithGoMigrations(river),
		goose.WithDisableGlobalRegistry(true),
		goose.WithSessionLocker(locker),
		goose.WithTableName("payrecon_schema_migrations"),
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

// MigrationResult is one applied migration.
type MigrationResult struct {
	Version int64  `json:"version"`
	Source  string `json:"source"`
}

// Migrate applies every pending migration. It is idempotent, and safe to run
// from several processes at once: a session-level advisory lock serialises
// them.
func Migrate(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) ([]MigrationResult, error) {
	p, db, err := provider(pool, logger)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := p.Up(ctx)
	out := make([]MigrationResult, 0, len(results))
	for _, r := range results {
		if r.Error == nil {
			out = append(out, MigrationResult{Version: r.Source.Version, Source: r.Source.Path})
		}
	}
	if err != nil {
		return out, fmt.Errorf("apply migrations: %w", err)
	}
	return out, nil
}

// ErrMigrationsPending says the database schema is behind the binary.
var ErrMigrationsPending = errors.New("migrations pending: run `payrecon migrate`")

// CheckMigrations returns nil when every migration this binary knows is
// applied, and an error wrapping ErrMigrationsPending otherwise.
func CheckMigrations(ctx context.Context, pool *pgxpool.Pool) error {
	p, db, err := provider(pool, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("check migrations: %w", err)
	}
	if pending {
		return ErrMigrationsPending
	}
	return nil
}
