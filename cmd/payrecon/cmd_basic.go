package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
)

// version and revision may be stamped at build time with -ldflags "-X
// main.version=… -X main.revision=…" (scripts/image does, from git): a
// release tag, and the commit where Go stamps none (a build outside a git
// checkout, or in a git worktree, whose .git is a file Go does not follow).
// Otherwise both come from the build info.
var version, revision = "", ""

type versionCmd struct {
	JSON bool `help:"Print JSON."`
}

// buildInfo is what `payrecon version` reports.
type buildInfo struct {
	// Version is the module version (v1.2.3 when installed with go install
	// …@v1.2.3, a pseudo-version from a module proxy, "(devel)" when built
	// from a checkout), or the release tag stamped with -ldflags.
	Version string `json:"version"`
	// Module is the main module's path.
	Module string `json:"module"`
	// Revision, RevisionTime and Modified are the VCS stamp Go writes when
	// it builds from a checkout (-buildvcs, on by default): the commit, its
	// time, and whether the work tree had uncommitted changes.
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revision_time,omitempty"`
	Modified     bool   `json:"modified,omitempty"`
	Go           string `json:"go"`
	// RiverSchemaVersion is the River migration payrecon's schema pins.
	RiverSchemaVersion int `json:"river_schema_version"`
}

// readBuildInfo reads the binary's build info (debug.ReadBuildInfo).
func readBuildInfo() buildInfo {
	info := buildInfo{Version: version, Go: runtime.Version(), RiverSchemaVersion: postgres.RiverSchemaVersion}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		info.Module = bi.Main.Path
		if info.Version == "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.time":
				info.RevisionTime = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Revision == "" {
		info.Revision = revision
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	return info
}

func (c *versionCmd) Run(a *app) error {
	info := readBuildInfo()
	if c.JSON {
		return a.printJSON(info)
	}
	rev := "no VCS revision"
	if info.Revision != "" {
		rev = "revision " + info.Revision
		if info.RevisionTime != "" {
			rev += " of " + info.RevisionTime
		}
		if info.Modified {
			rev += ", with uncommitted changes"
		}
	}
	fmt.Fprintf(a.stdout, "payrecon %s (%s; %s, River schema %d)\n", info.Version, rev, info.Go, info.RiverSchemaVersion)
	return nil
}

type classifyCmd struct {
	Table  bool   `help:"Print the whole decision table, then the money rules and the settlement rules (Markdown; the README carries the same tables)."`
	JSON   bool   `help:"Print JSON."`
	Local  string `arg:"" optional:"" help:"Local status: pending, paid or failed."`
	Stripe string `arg:"" optional:"" help:"Stripe PaymentIntent status, or not_found."`
}

func (c *classifyCmd) Run(a *app) error {
	if c.Local != "" || c.Stripe != "" {
		if c.Local == "" || c.Stripe == "" {
			return usageError{fmt.Errorf("classify takes two statuses: payrecon classify <local> <stripe>")}
		}
		s := payrecon.StripeStatus(c.Stripe)
		if c.Stripe == "not_found" {
			s = payrecon.NotFound
		}
		d := payrecon.Classify(payrecon.LocalStatus(c.Local), s)
		if c.JSON {
			return a.printJSON(payrecon.Cell{Local: payrecon.LocalStatus(c.Local), Stripe: s, Decision: d})
		}
		fmt.Fprintf(a.stdout, "%s / %s: %s", c.Local, s, d.Verdict)
		if d.Kind != "" {
			fmt.Fprintf(a.stdout, ", kind %s", d.Kind)
		}
		if d.Command != "" {
			fmt.Fprintf(a.stdout, ", repair %s", d.Command)
		}
		fmt.Fprintf(a.stdout, "\n  %s\n", d.Reason)
		return nil
	}
	if !c.Table && !c.JSON {
		return usageError{fmt.Errorf("say what to classify: --table, or <local> <stripe>")}
	}
	if c.JSON {
		return a.printJSON(payrecon.DecisionTable())
	}
	fmt.Fprint(a.stdout, payrecon.FormatDecisionTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatSessionTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatMoneyTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatSettlementTable())
	return nil
}

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

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// apiBaseShown is STRIPE_API_BASE as printed: Stripe's own when unset.
func apiBaseShown(raw string) string {
	if raw == "" {
		return "https://api.stripe.com"
	}
	return redact.URL(raw)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
