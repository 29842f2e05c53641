package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SessionColumnDefault is the column of payments that holds each row's
// Checkout Session (--session-column).
const SessionColumnDefault = "stripe_checkout_session_id"

// SessionColumn says whether payments has the Checkout Session column:
// detected at start like the money columns, never added by payrecon. A row
// whose PaymentIntent id is NULL or empty and whose session id is set is
// checked through its session; without the column every such row is
// invalid_local_row, as before.
type SessionColumn struct {
	// Column is the name asked for.
	Column string `json:"column"`
	// Found is true when payments has it with a text type.
	Found bool `json:"found"`
	// Problem says why it is not used.
	Problem string `json:"problem,omitempty"`
}

// Describe says in a few words which column is used, or why none is.
func (c SessionColumn) Describe() string {
	if c.Found {
		return c.Column + " (on)"
	}
	return fmt.Sprintf("%s (off: %s)", c.Column, c.Problem)
}

// DetectSessionColumn reads the catalogue (the relation search_path finds
// as payments, which may be a view) for the session column. It changes
// nothing.
func DetectSessionColumn(ctx context.Context, pool *pgxpool.Pool, column string) (SessionColumn, error) {
	c := SessionColumn{Column: column}
	if column == "" {
		c.Problem = "turned off (empty column name)"
		return c, nil
	}
	rows, err := pool.Query(ctx, queries.Get("payments_columns"))
	if err != nil {
		return c, fmt.Errorf("read the columns of payments: %w", err)
	}
	var (
		name, declared, typ, found string
		updatable                  bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &declared, &typ, &updatable}, func() error {
		if name == column {
			found = typ
		}
		return nil
	}); err != nil {
		return c, fmt.Errorf("read the columns of payments: %w", err)
	}
	switch {
	case found == "":
		c.Problem = fmt.Sprintf("payments has no column %q: rows without a PaymentIntent id are invalid_local_row", column)
	case !slices.Contains(moneyCurrencyTypes, found):
		c.Problem = fmt.Sprintf("column %q is %s, not text", column, found)
	default:
		c.Found = true
	}
	return c, nil
}

// sessionMarker is the placeholder of a row's session in the read queries
// and the commit: `”::text /*session_of:pay*/` reads as "" until
// sessionSQL makes it the column (coalesce(pay."…"::text, ”)).
var sessionMarker = regexp.MustCompile(`''::text /\*session_of:([a-z]+)\*/`)

// sessionSQL puts the session column into query q (a quoted identifier of a
// column the catalogue named).
func sessionSQL(q string, c SessionColumn) string {
	if !c.Found {
		return q
	}
	col := pgx.Identifier{c.Column}.Sanitize()
	return sessionMarker.ReplaceAllString(q, "coalesce(${1}."+col+"::text, '')")
}

// WithSessionColumn returns a store on the same pool that reads each row's
// Checkout Session from the column c found (DetectSessionColumn), and
// verifies a session row only while it still records that session.
func (s *Store) WithSessionColumn(c SessionColumn) *Store {
	r := *s
	if c.Found {
		r.sessions = &c
	} else {
		r.sessions = nil
	}
	r.rebuild()
	return &r
}

// SessionColumn returns the session column the store reads (zero when none).
func (s *Store) SessionColumn() SessionColumn {
	if s.sessions == nil {
		return SessionColumn{}
	}
	return *s.sessions
}
