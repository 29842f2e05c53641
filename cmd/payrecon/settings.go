package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
)

// setting is one line of the effective configuration, secrets redacted:
// its key (the log's and `config --json`'s), where it comes from, its
// value. Each flag group lists its own (settings), and `config`, run's
// start log and events's start log are all built from those lists, so
// that none is written by hand.
type setting struct {
	Key, Source string
	Value       any
}

// logAttrs turns settings into slog key-value pairs.
func logAttrs(groups ...[]setting) []any {
	var out []any
	for _, g := range groups {
		for _, s := range g {
			out = append(out, s.Key, s.Value)
		}
	}
	return out
}

// printSettings prints settings as `config` does: a table, or JSON of
// key → value (as text).
func (a *app) printSettings(w io.Writer, asJSON bool, groups ...[]setting) error {
	if asJSON {
		m := map[string]string{}
		for _, g := range groups {
			for _, s := range g {
				m[s.Key] = fmt.Sprint(s.Value)
			}
		}
		return a.printJSON(m)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, g := range groups {
		for _, s := range g {
			fmt.Fprintf(tw, "%s\t%v\t(%s)\n", s.Key, s.Value, s.Source)
		}
	}
	return tw.Flush()
}

// databaseSettings are the global flags' database setting.
func (c *cli) databaseSettings() []setting {
	return []setting{{"database_url", "DATABASE_URL / --database-url", redact.URL(c.DatabaseURL)}}
}

// logSettings are the global flags' logging settings.
func (c *cli) logSettings() []setting {
	return []setting{
		{"log_format", "PAYRECON_LOG_FORMAT / --log-format", c.LogFormat},
		{"log_level", "PAYRECON_LOG_LEVEL / --log-level", c.LogLevel},
	}
}

func (f stripeFlags) settings() []setting {
	return []setting{
		{"stripe_secret_key", "STRIPE_SECRET_KEY / --stripe-secret-key", redact.Secret(f.StripeSecretKey)},
		{"stripe_api_base", "STRIPE_API_BASE / --stripe-api-base", apiBaseShown(f.StripeAPIBase)},
		{"stripe_timeout", "--stripe-timeout", f.StripeTimeout},
	}
}

func (f publicListenFlags) settings() []setting {
	return []setting{
		{"stripe_webhook_secret", "STRIPE_WEBHOOK_SECRET / --stripe-webhook-secret", redact.SecretList(f.WebhookSecret)},
		{"http_addr", "PAYRECON_HTTP_ADDR / --http-addr", f.HTTPAddr},
		{"http_max_conns", "PAYRECON_HTTP_MAX_CONNS / --http-max-conns", f.HTTPMaxConns},
	}
}

func (f consoleFlags) settings() []setting {
	return []setting{
		{"admin_addr", "PAYRECON_ADMIN_ADDR / --admin-addr", f.AdminAddr},
		{"console_password", "PAYRECON_CONSOLE_PASSWORD / --console-password, PAYRECON_CONSOLE_PASSWORD_FILE / --console-password-file", f.describe()},
		{"metrics", "PAYRECON_METRICS_PUBLIC / --metrics-public", f.describeMetrics()},
	}
}

func (f repairModeFlag) settings() []setting {
	return []setting{{"repair_mode", "PAYRECON_REPAIR_MODE / --repair-mode", f.mode()}}
}

func (f retainFlags) settings() []setting {
	r := func(d retention) string { return postgres.FormatRetention(time.Duration(d)) }
	return []setting{
		{"retain_outbox", "PAYRECON_RETAIN_OUTBOX / --retain-outbox", r(f.RetainOutbox)},
		{"retain_webhook_events", "PAYRECON_RETAIN_WEBHOOK_EVENTS / --retain-webhook-events", r(f.RetainWebhookEvents)},
		{"retain_river_jobs", "PAYRECON_RETAIN_RIVER_JOBS / --retain-river-jobs", r(f.RetainRiverJobs)},
		{"retain_console_samples", "PAYRECON_RETAIN_CONSOLE_SAMPLES / --retain-console-samples", r(f.RetainConsoleSamples)},
		{"retain_findings", "PAYRECON_RETAIN_FINDINGS / --retain-findings", r(f.RetainFindings)},
	}
}

func (f pruneIntervalFlag) settings() []setting {
	return []setting{{"prune_interval", "PAYRECON_PRUNE_INTERVAL / --prune-interval", f.PruneInterval}}
}

func (f notifyFlags) settings() []setting {
	return []setting{
		{"notify_url", "PAYRECON_NOTIFY_URL / --notify-url", redact.URL(f.NotifyURL)},
		{"notify_secret", "PAYRECON_NOTIFY_SECRET / --notify-secret", redact.Secret(f.NotifySecret)},
	}
}

// settings are the money flags', with the kinds ignored as parsed.
func (f moneyFlags) settings(ignore map[payrecon.Kind]bool) []setting {
	const used = " (used when payments has it; `status` says whether it does)"
	return []setting{
		{"amount_column", "PAYRECON_AMOUNT_COLUMN / --amount-column", f.AmountColumn + used},
		{"currency_column", "PAYRECON_CURRENCY_COLUMN / --currency-column", f.CurrencyColumn + used},
		{"session_column", "PAYRECON_SESSION_COLUMN / --session-column", f.SessionColumn + used},
		{"ignore_kinds", "PAYRECON_IGNORE_KINDS / --ignore-kinds", ignoredList(ignore)},
		{"intent_metadata", "--intent-metadata", orDefault(f.IntentMetadata, "(any: every listed intent is payrecon's)")},
	}
}
