package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// pg_class relkinds payrecon tells apart.
const (
	relkindTable       = "r"
	relkindPartitioned = "p"
	relkindView        = "v"
)

// relkindNames name the other relkinds in refusals.
var relkindNames = map[string]string{
	"m": "a materialized view", "f": "a foreign table", "S": "a sequence", "i": "an index",
	"I": "a partitioned index", "c": "a composite type", "t": "a TOAST table",
}

// paymentsColumn is a column payrecon reads or writes in payments.
type paymentsColumn struct {
	name string
	// types are the base types it accepts (format_type names); empty: any.
	types []string
	// want says in words what the column must be.
	want string
	// written: payrecon UPDATEs it (the canonical writer, the sweep).
	written bool
	// reconciler: payrecon's own column, added to a table that lacks it
	// (00001); a view must have it already.
	reconciler bool
}

var (
	integerTypes = []string{"bigint", "integer"}
	textTypes    = []string{"text", "character varying"}
	tzTypes      = []string{"timestamp with time zone"}
)

// paymentsColumns is the shape payrecon needs: every column it reads or
// writes (queries/*.sql, the transition function of 00006), with the types
// it can work with.
var paymentsColumns = []paymentsColumn{
	{name: "id", types: integerTypes, want: "bigint or integer, the key the sweep walks in order"},
	{name: "order_id", want: "any type, shown by `findings show`"},
	{name: "stripe_payment_intent_id", types: textTypes, want: "text or varchar"},
	{name: "status", types: textTypes, want: "text or varchar holding pending, paid or failed", written: true},
	{name: "version", types: integerTypes, want: "integer or bigint, bumped on each transition", written: true},
	{name: "created_at", types: tzTypes, want: "timestamptz"},
	{name: "updated_at", types: tzTypes, want: "timestamptz", written: true},
	{name: "observed_external_status", types: textTypes, want: "text or varchar, payrecon's own", written: true, reconciler: true},
	{name: "last_reconciled_at", types: tzTypes, want: "timestamptz, payrecon's own", written: true, reconciler: true},
}

// PaymentsShapeError says why payrecon cannot work with payments: every
// problem found, in one line. It matches payrecon.ErrConfig (exit status 2):
// a person must change the table or the view.
type PaymentsShapeError struct {
	// Relation is what "payments" resolved to ("public.payments (table)"),
	// or what is missing.
	Relation string
	// Problems are the problems, each in a few words.
	Problems []string
}

func (e *PaymentsShapeError) Error() string {
	return fmt.Sprintf("cannot reconcile %s: %s (nothing was changed; see docs/payments-table.md)",
		e.Relation, strings.Join(e.Problems, "; "))
}

// Is makes errors.Is(err, payrecon.ErrConfig) true.
func (e *PaymentsShapeError) Is(target error) bool { return target == payrecon.ErrConfig }

// paymentsRelation is what "payments" is for this session.
type paymentsRelation struct {
	relkind string // "" when there is none
	name    string // qualified
	schema  string // current_schema(): where payrecon's tables go; "" when none
}

func readPaymentsRelation(ctx context.Context, pool *pgxpool.Pool) (paymentsRelation, error) {
	var kind, name, schema *string
	if err := pool.QueryRow(ctx, queries.Get("payments_relation")).Scan(&kind, &name, &schema); err != nil {
		return paymentsRelation{}, fmt.Errorf("look up payments: %w", err)
	}
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	return paymentsRelation{relkind: deref(kind), name: deref(name), schema: deref(schema)}, nil
}

// paymentsRelkind returns the pg_class relkind of payments ("" when there
// is none).
func paymentsRelkind(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	rel, err := readPaymentsRelation(ctx, pool)
	return rel.relkind, err
}

// CheckPaymentsShape checks, reading only the catalogue, that payments (the
// relation search_path finds under that name) is something payrecon can
// work with: a plain table or a view, with every column payrecon reads and writes
// (id, order_id, stripe_payment_intent_id, status, version, created_at,
// updated_at, and the reconciler's observed_external_status and
// last_reconciled_at) of a type it can use, those it writes updatable, and
// rows it may lock. A table may lack the reconciler's two columns (migrate
// adds them); a view must have them. When payments does not exist, migrate
// creates the seed's table, so that passes too. The error is a
// *PaymentsShapeError naming every problem.
func CheckPaymentsShape(ctx context.Context, pool *pgxpool.Pool) error {
	rel, err := readPaymentsRelation(ctx, pool)
	if err != nil {
		return err
	}
	if rel.schema == "" {
		return &PaymentsShapeError{Relation: "this database's search_path",
			Problems: []string{"no schema of search_path exists to hold payrecon's tables (create it, or fix search_path in DATABASE_URL or on the role)"}}
	}
	switch rel.relkind {
	case "":
		return nil // 00001 creates the seed's table in current_schema()
	case relkindTable, relkindView:
	case relkindPartitioned:
		// 00005 cannot build its indexes CONCURRENTLY on it, and a foreign
		// key needs a unique id, which partitioning by time rarely gives.
		return &PaymentsShapeError{Relation: rel.name,
			Problems: []string{"it is a partitioned table: put a view in front of it and index its partitions yourself"}}
	default:
		what := relkindNames[rel.relkind]
		if what == "" {
			what = "relkind " + rel.relkind
		}
		return &PaymentsShapeError{Relation: rel.name,
			Problems: []string{fmt.Sprintf("it is %s; payrecon needs a table or an updatable view", what)}}
	}
	view := rel.relkind == relkindView
	what := "table"
	if view {
		what = "view"
	}
	shape := &PaymentsShapeError{Relation: fmt.Sprintf("%s (%s)", rel.name, what)}

	type column struct {
		declared, base string
		updatable      bool
	}
	rows, err := pool.Query(ctx, queries.Get("payments_columns"))
	if err != nil {
		return fmt.Errorf("read the columns of payments: %w", err)
	}
	have := map[string]column{}
	var (
		name string
		c    column
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &c.declared, &c.base, &c.updatable}, func() error {
		have[name] = c
		return nil
	}); err != nil {
		return fmt.Errorf("read the columns of payments: %w", err)
	}
	for _, want := range paymentsColumns {
		got, ok := have[want.name]
		switch {
		case !ok && want.reconciler && !view:
			// 00001 adds it to the table.
		case !ok:
			p := fmt.Sprintf("no column %s (%s)", want.name, want.want)
			if want.reconciler {
				p += ": a view must have it, payrecon cannot add a column to a view"
			}
			shape.Problems = append(shape.Problems, p)
		case len(want.types) > 0 && !slices.Contains(want.types, got.base):
			shape.Problems = append(shape.Problems, fmt.Sprintf("%s is %s, not %s", want.name, got.declared, want.want))
		case view && want.written && !got.updatable:
			shape.Problems = append(shape.Problems, fmt.Sprintf("%s cannot be updated through the view (add an INSTEAD OF UPDATE trigger)", want.name))
		}
	}
	if _, err := pool.Exec(ctx, queries.Get("payments_lockable")); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return fmt.Errorf("check that payments rows can be locked: %w", err)
		}
		shape.Problems = append(shape.Problems, fmt.Sprintf("its rows cannot be locked (SELECT … FOR UPDATE: %s)", pgErr.Message))
	}
	if len(shape.Problems) > 0 {
		return shape
	}
	return nil
}
