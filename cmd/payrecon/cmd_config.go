package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
)

type configCmd struct {
	stripeFlags
	consoleFlags
	WebhookSecret string `name:"stripe-webhook-secret" env:"STRIPE_WEBHOOK_SECRET" placeholder:"SECRETS" help:"Webhook signing secrets, comma-separated during rotation."`
	HTTPAddr      string `name:"http-addr" env:"PAYRECON_HTTP_ADDR" default:"127.0.0.1:8080" help:"Public address of run: the webhook and health."`
	HTTPMaxConns  int    `name:"http-max-conns" env:"PAYRECON_HTTP_MAX_CONNS" default:"1000" help:"Connections run holds open at once on --http-addr."`
	JSON          bool   `help:"Print JSON."`
	retainFlags
	notifyFlags
	PruneInterval time.Duration `name:"prune-interval" env:"PAYRECON_PRUNE_INTERVAL" default:"1h" help:"How often run deletes history past its retention."`
	moneyFlags
	repairModeFlag
}

func (c *configCmd) Run(a *app) error {
	ignore, err := c.moneyFlags.ignore()
	if err != nil {
		return err
	}
	if _, err := c.moneyFlags.metadata(); err != nil {
		return err
	}
	if err := checkSecretList("STRIPE_WEBHOOK_SECRET (--stripe-webhook-secret)", c.WebhookSecret); err != nil {
		return err
	}
	cfg := []struct{ Key, Source, Value string }{
		{"database_url", "DATABASE_URL / --database-url", redact.URL(a.cli.DatabaseURL)},
		{"stripe_secret_key", "STRIPE_SECRET_KEY / --stripe-secret-key", redact.Secret(c.StripeSecretKey)},
		{"stripe_api_base", "STRIPE_API_BASE / --stripe-api-base", apiBaseShown(c.StripeAPIBase)},
		{"stripe_timeout", "--stripe-timeout", c.StripeTimeout.String()},
		{"stripe_webhook_secret", "STRIPE_WEBHOOK_SECRET / --stripe-webhook-secret", redact.SecretList(c.WebhookSecret)},
		{"http_addr", "PAYRECON_HTTP_ADDR / --http-addr", c.HTTPAddr},
		{"http_max_conns", "PAYRECON_HTTP_MAX_CONNS / --http-max-conns", strconv.Itoa(c.HTTPMaxConns)},
		{"admin_addr", "PAYRECON_ADMIN_ADDR / --admin-addr", c.AdminAddr},
		{"console_password", "PAYRECON_CONSOLE_PASSWORD / --console-password, PAYRECON_CONSOLE_PASSWORD_FILE / --console-password-file", c.consoleFlags.describe()},
		{"metrics", "PAYRECON_METRICS_PUBLIC / --metrics-public", c.consoleFlags.describeMetrics()},
		{"repair_mode", "PAYRECON_REPAIR_MODE / --repair-mode", c.mode().String()},
		{"log_format", "PAYRECON_LOG_FORMAT / --log-format", a.cli.LogFormat},
		{"log_level", "PAYRECON_LOG_LEVEL / --log-level", a.cli.LogLevel},
		{"retain_outbox", "PAYRECON_RETAIN_OUTBOX / --retain-outbox", postgres.FormatRetention(time.Duration(c.RetainOutbox))},
		{"retain_webhook_events", "PAYRECON_RETAIN_WEBHOOK_EVENTS / --retain-webhook-events", postgres.FormatRetention(time.Duration(c.RetainWebhookEvents))},
		{"retain_river_jobs", "PAYRECON_RETAIN_RIVER_JOBS / --retain-river-jobs", postgres.FormatRetention(time.Duration(c.RetainRiverJobs))},
		{"retain_console_samples", "PAYRECON_RETAIN_CONSOLE_SAMPLES / --retain-console-samples", postgres.FormatRetention(time.Duration(c.RetainConsoleSamples))},
		{"retain_findings", "PAYRECON_RETAIN_FINDINGS / --retain-findings", postgres.FormatRetention(time.Duration(c.RetainFindings))},
		{"prune_interval", "PAYRECON_PRUNE_INTERVAL / --prune-interval", c.PruneInterval.String()},
		{"notify_url", "PAYRECON_NOTIFY_URL / --notify-url", redact.URL(c.NotifyURL)},
		{"notify_secret", "PAYRECON_NOTIFY_SECRET / --notify-secret", redact.Secret(c.NotifySecret)},
		{"amount_column", "PAYRECON_AMOUNT_COLUMN / --amount-column", c.AmountColumn + " (used when payments has it; `status` says whether it does)"},
		{"currency_column", "PAYRECON_CURRENCY_COLUMN / --currency-column", c.CurrencyColumn + " (used when payments has it; `status` says whether it does)"},
		{"session_column", "PAYRECON_SESSION_COLUMN / --session-column", c.SessionColumn + " (used when payments has it; `status` says whether it does)"},
		{"ignore_kinds", "PAYRECON_IGNORE_KINDS / --ignore-kinds", ignoredList(ignore)},
		{"intent_metadata", "--intent-metadata", orDefault(c.IntentMetadata, "(any: every listed intent is payrecon's)")},
	}
	if c.JSON {
		m := map[string]string{}
		for _, e := range cfg {
			m[e.Key] = e.Value
		}
		return a.printJSON(m)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, e := range cfg {
		fmt.Fprintf(tw, "%s\t%s\t(%s)\n", e.Key, e.Value, e.Source)
	}
	return tw.Flush()
}
