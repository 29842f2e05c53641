package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Replicas keeps the heartbeats of the running replicas
// (payrecon_replicas, migration 00020).
type Replicas struct {
	pool *pgxpool.Pool
	id   string
}

// NewReplicas returns the heartbeat of the replica named id.
func NewReplicas(pool *pgxpool.Pool, id string) *Replicas { return &Replicas{pool: pool, id: id} }

// Beat records this replica's heartbeat and returns how many replicas
// (itself included) beat within alive.
func (r *Replicas) Beat(ctx context.Context, alive time.Duration) (int, error) {
	var n int
	if err := r.pool.QueryRow(ctx, queries.Get("replica_heartbeat"), pgx.StrictNamedArgs{"id": r.id, "alive": alive}).Scan(&n); err != nil {
		return 0, fmt.Errorf("replica heartbeat: %w", err)
	}
	return n, nil
}

// Leave removes this replica's row.
func (r *Replicas) Leave(ctx context.Context) error {
	if _, err := r.pool.Exec(ctx, queries.Get("replica_leave"), pgx.StrictNamedArgs{"id": r.id}); err != nil {
		return fmt.Errorf("replica leaves: %w", err)
	}
	return nil
}

// ActiveJobs returns the River jobs of kinds that are running or waiting,
// as "kind job" (their job argument).
func ActiveJobs(ctx context.Context, pool *pgxpool.Pool, kinds []string) (map[string]bool, error) {
	rows, err := pool.Query(ctx, queries.Get("active_jobs"), pgx.StrictNamedArgs{"kinds": kinds})
	if err != nil {
		return nil, fmt.Errorf("read the active jobs: %w", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the active jobs: %w", err)
	}
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, nil
}
