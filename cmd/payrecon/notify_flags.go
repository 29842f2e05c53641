package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// notifyFlags configure the notifications of transitions to the
// application: the commands whose writer makes transitions (run, relay,
// events) take them.
type notifyFlags struct {
	NotifyURL    string `name:"notify-url" env:"PAYRECON_NOTIFY_URL" placeholder:"URL" help:"POST every payment transition to this URL as signed JSON (README: Notifications); needs --notify-secret. Unset: no notifications."`
	NotifySecret string `name:"notify-secret" env:"PAYRECON_NOTIFY_SECRET" placeholder:"SECRET" help:"Signs the notifications (Payrecon-Signature: HMAC-SHA256); required with --notify-url (prefer the environment variable: flags show in ps)."`
}

// config returns the relay's notification configuration; a URL without a
// secret, or one that is not http(s), is a usage error (exit 2).
func (f notifyFlags) config() (relay.NotifyConfig, error) {
	c := relay.NotifyConfig{URL: f.NotifyURL, Secret: f.NotifySecret}
	if err := c.Validate(); err != nil {
		return c, usageError{fmt.Errorf("--notify-url: %w", err)}
	}
	return c, nil
}

// describe is the configuration for the start-up log, secrets redacted.
func (f notifyFlags) describe() []any {
	if f.NotifyURL == "" {
		return []any{"notify_url", "(off)"}
	}
	return []any{"notify_url", redact.URL(f.NotifyURL), "notify_secret", redact.Secret(f.NotifySecret)}
}

// notifyingWriter returns a writer whose transitions insert their
// notification jobs (through an insert-only relay) when notifications are
// configured: by nc here (recorded in the database for every process), or
// by another process earlier.
func (a *app) notifyingWriter(ctx context.Context, pool *pgxpool.Pool, nc relay.NotifyConfig) (*postgres.Writer, error) {
	w := postgres.NewWriter(nil)
	rl, err := relay.New(pool, w, relay.Config{InsertOnly: true, Notify: nc, Logger: a.logger.With("component", "relay")})
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	if err := rl.RecordNotifications(ctx); err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	return w, nil
}
