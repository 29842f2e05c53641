package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Queries exposes the package's statements to its external tests.
var Queries = queries

// PruneStatements returns the statements Prune runs for tg: its batch and
// its dry-run count (for tests that prepare or explain them).
func PruneStatements(tg PruneTarget) (batch, count string, err error) {
	if err := ValidatePruneTargets([]PruneTarget{tg}); err != nil {
		return "", "", err
	}
	p := &Pruner{}
	return p.statement("batch", tg), p.statement("count", tg), nil
}

// MigrateDownTo rolls the schema back to version (for tests that rebuild an
// older installation).
func MigrateDownTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	p, db, err := provider(pool, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = p.DownTo(ctx, version)
	return err
}
