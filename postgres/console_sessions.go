package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConsoleSessions keeps the console's sessions in console_sessions
// (console.SessionStore), shared by every replica on the database: a
// logout on one ends the session on all.
type ConsoleSessions struct {
	pool *pgxpool.Pool
}

// NewConsoleSessions returns the session store on pool.
func NewConsoleSessions(pool *pgxpool.Pool) *ConsoleSessions { return &ConsoleSessions{pool: pool} }

// StartSession implements console.SessionStore; the sessions expired at now
// are deleted in the same statement.
func (s *ConsoleSessions) StartSession(ctx context.Context, idHash []byte, operator string, now, expires time.Time) error {
	if _, err := s.pool.Exec(ctx, queries.Get("console_session_start"), pgx.StrictNamedArgs{"id_hash": idHash, "operator": operator,
		"now": now, "expires_at": expires}); err != nil {
		return fmt.Errorf("start console session of %s: %w", operator, err)
	}
	return nil
}

// SessionValid implements console.SessionStore.
func (s *ConsoleSessions) SessionValid(ctx context.Context, idHash []byte, now time.Time) (bool, error) {
	var ok bool
	if err := s.pool.QueryRow(ctx, queries.Get("console_session_valid"), pgx.StrictNamedArgs{"id_hash": idHash, "now": now}).Scan(&ok); err != nil {
		return false, fmt.Errorf("check console session: %w", err)
	}
	return ok, nil
}

// EndSession implements console.SessionStore.
func (s *ConsoleSessions) EndSession(ctx context.Context, idHash []byte) error {
	if _, err := s.pool.Exec(ctx, queries.Get("console_session_end"), pgx.StrictNamedArgs{"id_hash": idHash}); err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}
