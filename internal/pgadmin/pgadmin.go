// Package pgadmin creates and drops whole databases on a PostgreSQL server:
// the demo's own database and the tests' fresh ones.
package pgadmin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/payrecon/payrecon/internal/redact"
)

// WithDatabase returns the connection string raw with its database
// replaced by db. Both URLs and keyword/value strings are accepted; an
// error never echoes raw (it may hold a password).
func WithDatabase(raw, db string) (string, error) {
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", errors.New("the PostgreSQL URL is malformed")
		}
		u.Path = "/" + db
		u.RawPath = ""
		return u.String(), nil
	}
	if _, err := pgx.ParseConfig(raw); err != nil {
		return "", errors.New("the PostgreSQL connection string is malformed")
	}
	return raw + " dbname=" + db, nil // a later keyword wins
}

// RandomName returns prefix followed by 12 random hex digits.
func RandomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // never fails on supported platforms
	return prefix + hex.EncodeToString(b)
}

// Exec runs one statement on the server's maintenance connection
// serverURL. When the server is momentarily out of connections (SQLSTATE
// 53300: test packages and payrecon processes share it) it waits and tries
// again until ctx ends.
func Exec(ctx context.Context, serverURL, sql string) error {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		err := func() error {
			c, err := pgx.Connect(ctx, serverURL)
			if err != nil {
				return fmt.Errorf("connect to PostgreSQL at %s: %w", redact.URL(serverURL), err)
			}
			defer c.Close(context.WithoutCancel(ctx))
			_, err = c.Exec(ctx, sql)
			return err
		}()
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "53300" {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// CreateDatabase creates database name, as a file copy of template when
// template is not empty.
func CreateDatabase(ctx context.Context, serverURL, name, template string) error {
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize() + " STRATEGY FILE_COPY"
	}
	if err := Exec(ctx, serverURL, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// DropDatabase drops database name if it exists, disconnecting whoever is
// left on it.
func DropDatabase(ctx context.Context, serverURL, name string) error {
	if err := Exec(ctx, serverURL, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}
