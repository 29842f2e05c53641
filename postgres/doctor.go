package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// What `payrecon doctor` reads: catalogue and settings only, never a write
// (it runs on a connection with default_transaction_read_only).

// MigrationState is the schema's state against this binary's migrations.
type MigrationState struct {
	// Migrated is false when payrecon's version table does not exist.
	Migrated bool
	// Known are this binary's migration versions, in order.
	Known []int64
	// Pending are the known versions not applied; Unknown the applied ones
	// this binary does not know (a newer payrecon migrated the database).
	Pending, Unknown []int64
}

// ReadMigrationState compares the applied migrations with the embedded
// ones, reading only.
func ReadMigrationState(ctx context.Context, pool *pgxpool.Pool) (MigrationState, error) {
	var st MigrationState
	p, db, err := provider(pool, nil) // only to list the known migrations: no query
	if err != nil {
		return st, err
	}
	defer db.Close()
	for _, src := range p.ListSources() {
		st.Known = append(st.Known, src.Version)
	}
	slices.Sort(st.Known)
	if err := pool.QueryRow(ctx, queries.Get("relation_exists"), pgx.StrictNamedArgs{"name": migrationsTable}).Scan(&st.Migrated); err != nil {
		return st, fmt.Errorf("read migrations: %w", err)
	}
	if !st.Migrated {
		st.Pending = st.Known
		return st, nil
	}
	rows, err := pool.Query(ctx, queries.Get("migrations_applied"))
	if err != nil {
		return st, fmt.Errorf("read migrations: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return st, fmt.Errorf("read migrations: %w", err)
	}
	for _, v := range st.Known {
		if !slices.Contains(applied, v) {
			st.Pending = append(st.Pending, v)
		}
	}
	for _, v := range applied {
		if v != 0 && !slices.Contains(st.Known, v) { // goose's version 0 is its own
			st.Unknown = append(st.Unknown, v)
		}
	}
	slices.Sort(st.Unknown)
	return st, nil
}

// PaymentsInfo is what the catalogue says about payments.
type PaymentsInfo struct {
	// Relation is the qualified name ("" when there is none); Kind is
	// "table", "view", "partitioned table" or another pg_class kind.
	Relation, Kind string
	// Columns maps each column to its base type.
	Columns map[string]string
	// Indexes are a table's indexes (a view has none).
	Indexes []IndexInfo
}

// IndexInfo is one index of payments.
type IndexInfo struct {
	Name            string
	Columns         []string
	Unique, Primary bool
	Valid           bool
}

// Leads reports whether the index's first column is col.
func (i IndexInfo) Leads(col string) bool { return len(i.Columns) > 0 && i.Columns[0] == col }

// ReadPaymentsInfo reads payments' kind, columns and indexes.
func ReadPaymentsInfo(ctx context.Context, pool *pgxpool.Pool) (PaymentsInfo, error) {
	rel, err := readPaymentsRelation(ctx, pool)
	if err != nil {
		return PaymentsInfo{}, err
	}
	info := PaymentsInfo{Relation: rel.name, Columns: map[string]string{}}
	switch rel.relkind {
	case relkindTable:
		info.Kind = "table"
	case relkindView:
		info.Kind = "view"
	case relkindPartitioned:
		info.Kind = "partitioned table"
	case "":
		return info, nil
	default:
		info.Kind = relkindNames[rel.relkind]
	}
	rows, err := pool.Query(ctx, queries.Get("payments_columns"))
	if err != nil {
		return info, fmt.Errorf("read the columns of payments: %w", err)
	}
	var (
		name, declared, base string
		updatable            bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &declared, &base, &updatable}, func() error {
		info.Columns[name] = base
		return nil
	}); err != nil {
		return info, fmt.Errorf("read the columns of payments: %w", err)
	}
	rows, err = pool.Query(ctx, queries.Get("payments_indexes"))
	if err != nil {
		return info, fmt.Errorf("read the indexes of payments: %w", err)
	}
	var ix IndexInfo
	if _, err := pgx.ForEachRow(rows, []any{&ix.Name, &ix.Columns, &ix.Unique, &ix.Primary, &ix.Valid}, func() error {
		x := ix
		x.Columns = slices.Clone(ix.Columns)
		info.Indexes = append(info.Indexes, x)
		return nil
	}); err != nil {
		return info, fmt.Errorf("read the indexes of payments: %w", err)
	}
	return info, nil
}

// ConnectionFacts are the server's connection limits and use.
type ConnectionFacts struct {
	// Max is max_connections; Reserved the slots ordinary roles cannot use.
	Max, Reserved int
	// InUse counts the client connections open on the server now;
	// OthersInUse those that are not payrecon's.
	InUse, OthersInUse int
}

// Available is what ordinary roles may open: Max less Reserved.
func (c ConnectionFacts) Available() int { return c.Max - c.Reserved }

// ReadConnectionFacts reads the connection settings and pg_stat_activity.
func ReadConnectionFacts(ctx context.Context, pool *pgxpool.Pool) (ConnectionFacts, error) {
	var c ConnectionFacts
	if err := pool.QueryRow(ctx, queries.Get("connection_facts")).Scan(&c.Max, &c.Reserved, &c.InUse, &c.OthersInUse); err != nil {
		return c, fmt.Errorf("read the connection settings: %w", err)
	}
	return c, nil
}

// DatabaseNow is the database server's clock.
func DatabaseNow(ctx context.Context, pool *pgxpool.Pool) (time.Time, error) {
	var t time.Time
	if err := pool.QueryRow(ctx, queries.Get("database_now")).Scan(&t); err != nil {
		return t, fmt.Errorf("read the database's clock: %w", err)
	}
	return t, nil
}

// RowsEstimate is the planner's estimate of payments' size.
func (m *Monitor) RowsEstimate(ctx context.Context) (int64, error) {
	var n int64
	if err := m.pool.QueryRow(ctx, queries.Get("payments_rows_estimate")).Scan(&n); err != nil {
		return 0, fmt.Errorf("estimate payments: %w", err)
	}
	return n, nil
}

// CreatedSince counts payments created after since (payments_created_at).
func (m *Monitor) CreatedSince(ctx context.Context, since time.Time) (int64, error) {
	var n int64
	if err := m.pool.QueryRow(ctx, queries.Get("payments_created_since"), pgx.StrictNamedArgs{"since": since}).Scan(&n); err != nil {
		return 0, fmt.Errorf("count payments created since %s: %w", since.Format(time.RFC3339), err)
	}
	return n, nil
}
