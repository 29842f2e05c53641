package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// OpenConfig tunes Open.
type OpenConfig struct {
	// ApplicationName is shown in pg_stat_activity (and so names the holder
	// of a sweep lease).
	ApplicationName string
	// MaxConns bounds the pool; zero keeps pgx's default.
	MaxConns int32
	// ConnectTimeout bounds the first connection; default 10s.
	ConnectTimeout time.Duration
	// ReadOnly opens every connection with default_transaction_read_only:
	// PostgreSQL refuses any write (`payrecon doctor`).
	ReadOnly bool
}

// Open parses url, connects and pings, and returns a pool. Its errors are
// meant for a person: they say what is wrong and never contain the
// password.
func Open(ctx context.Context, url string, cfg OpenConfig) (*pgxpool.Pool, error) {
	if url == "" {
		return nil, errors.New("DATABASE_URL is not set: export DATABASE_URL=postgres://user@host:5432/dbname (or pass --database-url)")
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL is not a valid PostgreSQL connection string: %w", redactParseError(err))
	}
	if cfg.ApplicationName != "" {
		pc.ConnConfig.RuntimeParams["application_name"] = cfg.ApplicationName
	}
	if cfg.ReadOnly {
		pc.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	pc.ConnConfig.ConnectTimeout = timeout
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("open PostgreSQL pool: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		where := net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port)))
		return nil, fmt.Errorf("cannot reach PostgreSQL at %s, database %q: %w (is the server running, and does DATABASE_URL point at it?)", where, pc.ConnConfig.Database, connectCause(err))
	}
	return pool, nil
}

// ApplicationName builds a pg_stat_activity name that identifies this
// process: "payrecon <command> (host pid N)".
func ApplicationName(command string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("payrecon %s (%s pid %d)", command, host, os.Getpid())
}

func connectCause(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Errorf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		err = errors.Unwrap(ce)
	}
	// One line: pgx lists every address it tried on its own line.
	return errors.New(strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " "))
}

// redactParseError drops pgx's echo of the connection string, which may
// hold a password.
func redactParseError(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if inner := errors.Unwrap(pe); inner != nil {
			return errors.New(inner.Error())
		}
		return errors.New("malformed connection string")
	}
	return err
}
