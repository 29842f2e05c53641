// Package demo is `payrecon demo`: every kind of drift payrecon knows,
// injected into a fresh database and an in-process Stripe simulator,
// reconciled by the real service, and checked.
//
// Run creates its own database on a PostgreSQL server, migrates it, and plays
// a scenario that is a pure function of Config.Seed:
//
//  1. Payments are seeded (pending) with their PaymentIntents in the
//     simulator, created over the last two days in time order; orphan
//     intents with no local row are interleaved in time (missing_locally),
//     some rows get no intent at all (missing_externally), and some intents
//     a status payrecon does not know (unknown_status).
//  2. Intents move in the simulator, and their webhooks are delivered,
//     signed, over HTTP to the service's own webhook handler
//     (httpapi.NewServer with the canonical writer): most in order, some
//     dropped (missed_success, missed_cancel), some twice, some in the
//     reverse order; a retry that succeeds after a failed attempt is refused
//     by the writer (failed_locally_paid_externally); and a buggy app marks
//     some payments paid that Stripe never took (paid_locally_not_externally).
//  3. Every row is snapshotted.
//  4. The real service (service.New: sweep, repair workers, webhook endpoint)
//     runs until one full sweep cycle completes and the repair queue drains.
//     The grace window is off: every webhook landed before the sweep began.
//     The events catch-up runs too (every second), from 72 hours back: the
//     webhooks of step 2 happened four days earlier on the simulator's
//     clock, so the ones dropped then are left to the sweep.
//  5. Live phase: once the sweep has passed the first untouched rows, their
//     intents succeed; the webhook endpoint is down for half of them (the
//     deliveries are dropped) and receives the others. The catch-up applies
//     the lost events long before the sweep's next cycle would reach them;
//     the report gives the detection delay and fails if a live event was
//     applied twice or missed.
//  6. Settlement, once the service stopped: the simulator pays every
//     succeeded charge out in an automatic payout every eighth of the span
//     (with its refunds, disputes and a fee line), except a few paid rows'
//     (paid_not_settled); charges of orders marked failed and of orphan
//     intents are paid out too (settled_not_paid_locally), and the rows
//     whose amount differs settle for Stripe's (settled_amount_mismatch).
//     One payout's amount is off by one, another fails after it was paid,
//     one is manual. The payouts check (`run`'s round) reads and judges
//     them with --settle-after a quarter of the span, then reads the failed
//     payout again, as its event would make it.
//  7. The database is read back into a Report: for each kind, injected,
//     detected, repaired, left for review and missed; findings on rows not
//     injected with their kind; rows that must not change but did.
//
// With Config.Accounts the same scenario plays as a platform on Stripe
// Connect (platform.go): payments gets the account column, the rows and
// orphans are spread over the platform's own account and the connected
// accounts (plan.spread), each intent lives on its account in the
// simulator, one webhook per account arrives from another account
// (account_mismatch), the service sweeps every account through River, and
// the Report's Platform gives the scorecard per account and the requests
// made under the wrong Stripe-Account. The payouts phase pays out the
// platform's own charges only.
//
// Report.OK is the verdict the command exits with.
package demo

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"time"

	"github.com/payrecon/payrecon/internal/pgadmin"
	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/internal/sqlq"
)

// Defaults of Config.
const (
	PaymentsDefault = 10000
	BatchDefault    = 200
	SpanDefault     = 48 * time.Hour
)

// Config configures a demo run. The zero value runs the default scenario.
type Config struct {
	// Payments is the number of local payments rows (at least MinPayments).
	// Default PaymentsDefault.
	Payments int
	// Seed makes the scenario: the same seed injects the same drifts into
	// the same rows.
	Seed uint64
	// Keep keeps the demo database instead of dropping it.
	Keep bool
	// Batch is the sweep's batch size. Default BatchDefault.
	Batch int
	// Span is how far back the payments' creation times reach. Default
	// SpanDefault.
	Span time.Duration
	// Logger receives the demo's phases; the embedded service's own logs
	// are shown from warnings up. Nil discards them.
	Logger *slog.Logger
	// Progress, when set, is called from one goroutine a few times a
	// second while the service runs, and once more at the end.
	Progress func(Progress)
	// AdminAddr is where the embedded service serves its admin listener
	// (the console, River's dashboard, metrics) while the demo runs; it
	// must be loopback (the demo sets no console password). Default
	// 127.0.0.1:0, a free port; the log says which.
	AdminAddr string
	// TamperInSync is a self-test of the check: while the sweep runs, this
	// many in-sync rows are changed behind the canonical writer's back (a
	// plain UPDATE of version and updated_at, as a buggy app would), and
	// the report must then count them as touched and fail.
	TamperInSync int
	// Accounts, when positive, plays the demo as a platform on Stripe
	// Connect: payments gets the account column (stripe_account_id), its
	// rows are spread over the platform's own account and this many
	// connected accounts, each with drift; the simulator keeps each
	// account's intents and events under its Stripe-Account; the service
	// sweeps every account as its own job through River (package
	// platform); and the report gives the scorecard per account and the
	// requests made under the wrong account (at most MaxAccounts).
	Accounts int
}

// Progress is the state of the running service.
type Progress struct {
	// Phase is "sweep" until the cycle completes, then "drain".
	Phase string
	// Swept and Rows are the rows swept in this cycle and the rows to
	// sweep.
	Swept, Rows int
	// Repaired and Repairs are the repair commands applied and the repairs
	// the scenario expects.
	Repaired, Repairs int
}

func (c Config) withDefaults() Config {
	if c.Payments == 0 {
		c.Payments = PaymentsDefault
	}
	if c.Batch <= 0 {
		c.Batch = BatchDefault
	}
	if c.Span <= 0 {
		c.Span = SpanDefault
	}
	if c.AdminAddr == "" {
		c.AdminAddr = "127.0.0.1:0"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Payments < MinPayments:
		return fmt.Errorf("the demo needs at least %d payments to inject every kind of drift, got %d", MinPayments, c.Payments)
	case c.Payments > 5_000_000:
		return fmt.Errorf("%d payments is more than the demo is meant for (at most 5000000)", c.Payments)
	case c.Batch > 10000:
		return fmt.Errorf("batch %d is too large (at most 10000)", c.Batch)
	case c.TamperInSync < 0:
		return fmt.Errorf("tamper count must not be negative, got %d", c.TamperInSync)
	case c.Accounts < 0:
		return fmt.Errorf("accounts must not be negative, got %d", c.Accounts)
	case c.Accounts > MaxAccounts(c.Payments):
		return fmt.Errorf("%d payments give drift to at most %d connected accounts, got %d (raise --payments)", c.Payments, MaxAccounts(c.Payments), c.Accounts)
	}
	return nil
}

// Run plays the scenario against a new database on the PostgreSQL server at
// serverURL (any database there: it only connects to create and drop its
// own) and returns the report. The database, payrecon_demo_<random>, is
// dropped at the end, also on error and cancellation, unless cfg.Keep. An
// error means the demo could not run to the end; a report that is not OK
// means payrecon got something wrong.
func Run(ctx context.Context, serverURL string, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	name := pgadmin.RandomName("payrecon_demo_")
	dbURL, err := pgadmin.WithDatabase(serverURL, name)
	if err != nil {
		return Report{}, err
	}
	if err := pgadmin.CreateDatabase(ctx, serverURL, name, ""); err != nil {
		return Report{}, err
	}
	cfg.Logger.Info("demo database created", "database", name)
	keep := cfg.Keep
	defer func() {
		if keep {
			return
		}
		if err := pgadmin.DropDatabase(context.WithoutCancel(ctx), serverURL, name); err != nil {
			cfg.Logger.Warn("could not drop the demo database; drop it by hand", "database", name, "error", err)
			return
		}
		cfg.Logger.Info("demo database dropped", "database", name)
	}()

	r := &runner{cfg: cfg, log: cfg.Logger, dbURL: dbURL}
	rep, err := r.run(ctx)
	rep.Database = name
	rep.Kept = keep
	if keep {
		rep.DatabaseURL = redact.URL(dbURL)
	}
	return rep, err
}

// minLevel is a slog handler that drops records below a level: the demo
// shows the embedded components' warnings and errors, not their chatter.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(as), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

func quiet(l *slog.Logger) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn})
}

//go:embed queries/*.sql
var queryFiles embed.FS

// queries are the demo's statements, by file name.
var queries = sqlq.New("demo", queryFiles, "queries")
