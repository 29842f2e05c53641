package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// cli is the command tree. Each command is a struct with a Run(*app) error
// method; kong builds the parser and the help from the tags.
type cli struct {
	Globals

	Migrate  migrateCmd  `cmd:"" help:"Apply the schema migrations (idempotent; safe from several processes at once)."`
	Scan     scanCmd     `cmd:"" help:"Sweep every payments row against Stripe: one cycle with --once, else continuously."`
	Relay    relayCmd    `cmd:"" help:"Deliver queued repair commands to the canonical writer."`
	Events   eventsCmd   `cmd:"" help:"Catch up on Stripe's events (GET /v1/events) through the webhook's code path: once with --once, else continuously."`
	Prune    pruneCmd    `cmd:"" help:"Delete history past its retention (processed repair commands, webhook events, completed River jobs, console samples): --once, for cron."`
	Run      runCmd      `cmd:"" help:"The long-running service: sweep, events catch-up, recent window, repair workers, webhook endpoint, metrics and health."`
	Status   statusCmd   `cmd:"" help:"Reconciliation lag, cycle progress and projection, findings and the repair queue."`
	Findings findingsCmd `cmd:"" help:"List, show, resolve and re-check findings."`
	Payments paymentsCmd `cmd:"" help:"A payment's history: transitions, findings, repairs, webhooks."`
	Repairs  repairsCmd  `cmd:"" help:"Repair commands held for review (--repair-mode review): list them, approve them."`
	Payouts  payoutsCmd  `cmd:"" help:"Settlement: Stripe's payouts and their lines reconciled to payments (payouts --once; list, show, export)."`
	Plan     planCmd     `cmd:"" help:"The cycle-time arithmetic: how long a full sweep takes, and whether it ever completes."`
	Classify classifyCmd `cmd:"" help:"Print the decision table, or classify one (local, Stripe) status pair."`
	Demo     demoCmd     `cmd:"" help:"Seed a database with every kind of drift, reconcile it against the built-in Stripe simulator, and report."`
	Doctor   doctorCmd   `cmd:"" help:"Check an installation before its first day: the database, the payments table, connections, the Stripe key and its permissions, clocks, webhook, notification and console settings, the read allocation. Takes run's flags and environment; only reads; exit 1 when a check fails."`
	Config   configCmd   `cmd:"" help:"Print the effective configuration, secrets redacted."`
	Version  versionCmd  `cmd:"" help:"Print the version."`
}

// Globals are the flags every command takes.
type Globals struct {
	DatabaseURL string `name:"database-url" env:"DATABASE_URL" placeholder:"URL" help:"PostgreSQL connection string."`
	LogFormat   string `name:"log-format" env:"PAYRECON_LOG_FORMAT" enum:"text,json" default:"text" help:"Log format on stderr: text or json."`
	LogLevel    string `name:"log-level" env:"PAYRECON_LOG_LEVEL" enum:"debug,info,warn,error" default:"info" help:"Least severe log level shown."`
	DBMaxConns  int    `name:"db-max-conns" env:"PAYRECON_DB_MAX_CONNS" default:"20" help:"PostgreSQL connections this process opens at most, everything included (sweep, leases, repair workers, River, webhooks, console): 20 keeps three replicas at 60 of PostgreSQL's default 100. run needs at least 12; its repair workers get what is left after 10."`
}

// Connection budget (--db-max-conns). runConnReserve is what `run` keeps
// for everything but the repair workers: three leases (sweep, recent
// window, events catch-up), their three jobs' own statements, River's
// listener, producer and leader, and the webhook, health and console
// requests. relayConnReserve is the same for `relay` (River only).
const (
	runConnReserve   = 10
	runConnMin       = runConnReserve + 2
	relayConnReserve = 4
	relayConnMin     = relayConnReserve + 1
)

// workersWithin returns the repair workers that fit in the budget beside
// reserve, and whether --workers had to be lowered to fit.
func workersWithin(workers, maxConns, reserve int) (int, bool) {
	if fit := maxConns - reserve; workers > fit {
		return fit, true
	}
	return workers, false
}

// stripeFlags configure the Stripe client.
type stripeFlags struct {
	StripeSecretKey string        `name:"stripe-secret-key" env:"STRIPE_SECRET_KEY" placeholder:"KEY" help:"Stripe secret or restricted key with read access to PaymentIntents (prefer the environment variable: flags show in ps)."`
	StripeAPIBase   string        `name:"stripe-api-base" env:"STRIPE_API_BASE" placeholder:"URL" help:"Stripe API base URL override (stripe-mock, the simulator); empty for ${stripe_api_base}."`
	StripeTimeout   time.Duration `name:"stripe-timeout" default:"10s" help:"Per-request timeout for Stripe calls."`
}

// publicListenFlags are the public listener's (the webhook and health):
// run serves it, config shows it.
type publicListenFlags struct {
	WebhookSecret string `name:"stripe-webhook-secret" env:"STRIPE_WEBHOOK_SECRET" placeholder:"SECRETS" help:"Webhook signing secrets (whsec_…), comma-separated during a rotation; unset disables POST /webhooks/stripe."`
	HTTPAddr      string `name:"http-addr" env:"PAYRECON_HTTP_ADDR" default:"${http_addr_default}" help:"Public address: POST /webhooks/stripe, /healthz and /readyz, nothing else."`
	HTTPMaxConns  int    `name:"http-max-conns" env:"PAYRECON_HTTP_MAX_CONNS" default:"1000" help:"At most this many connections open at once on --http-addr: at the cap a new one closes the oldest that serves no request (silent, or idle between requests), so a flood of idle connections can neither use up file descriptors nor keep webhooks out."`
}

// pruneIntervalFlag is run's prune schedule (config shows it).
type pruneIntervalFlag struct {
	PruneInterval time.Duration `name:"prune-interval" env:"PAYRECON_PRUNE_INTERVAL" default:"1h" help:"How often history past its --retain-* is deleted (a River periodic job, on one replica); 0: never."`
}

// minCycleFlag is the sweep's minimum cycle: run sleeps by it, status
// projects the reads with it.
type minCycleFlag struct {
	MinCycle time.Duration `name:"min-cycle" default:"1m" help:"Start a new cycle no sooner than this after the last one started (sleeps only when a cycle completes early); 0: no minimum. status projects the sweep's reads with it."`
}

// readShareFlag is the share of Stripe's read allocation the sweep plans
// (scan, run, status, plan).
type readShareFlag struct {
	ReadShare float64 `name:"read-share" default:"0.5" help:"Plan at most this share of Stripe's read allocation (500 reads per transaction over 30 days, at least 10,000; for a platform, summed over its accounts): run stretches an account's cycle rather than read more, status and plan say which accounts' cycles it stretches. 0: no limit."`
}

// maxAttemptsFlag bounds a repair command's delivery attempts (run, relay).
type maxAttemptsFlag struct {
	MaxAttempts int `name:"max-attempts" default:"8" help:"Attempts before a repair command is dead-lettered (set on commands queued from now on)."`
}

// eventsIntervalFlag is the events catch-up's interval (run, events).
type eventsIntervalFlag struct {
	EventsInterval time.Duration `name:"events-interval" env:"PAYRECON_EVENTS_INTERVAL" default:"30s" help:"Catch up on Stripe's events (GET /v1/events, the webhook's types) this often, through the webhook's code path: a lost webhook is applied within one interval. Needs Events: Read. run: 0 is off; events without --once: until interrupted."`
}

// payoutsIntervalFlag is the payouts check's interval (run, payouts).
type payoutsIntervalFlag struct {
	PayoutsInterval time.Duration `name:"payouts-interval" env:"PAYRECON_PAYOUTS_INTERVAL" default:"1h" help:"Read Stripe's payouts and their lines and judge settlement this often (a River periodic job under run, on one replica, within --rps; payout.* events read their payout at once). Needs Payouts: Read and Balance: Read (without them the check turns off, said once in the log). run: 0 is off; payouts check without --once: until interrupted."`
}

// rpsFlag is the Stripe request budget (scan, run, events, payouts).
type rpsFlag struct {
	RPS float64 `name:"rps" default:"20" help:"Stripe request budget per second, shared by all concurrent calls (Stripe allows 100/s live, 25/s in a sandbox and per endpoint)."`
}

// jobFlag names the sweep job (scan, run, status, findings recheck, plan).
type jobFlag struct {
	Job string `default:"${job_default}" help:"Sweep job name: its cursor, its lease, the job findings are recorded under, the job whose measured throughput plan uses; a platform's accounts' jobs are <job>/<acct_…>."`
}

// sweepModeFlag is how the sweep asks Stripe (scan, run; status projects
// its reads with it).
type sweepModeFlag struct {
	Mode string `enum:"retrieve,list,auto" default:"auto" help:"How to ask Stripe: retrieve (one request per row), list (PaymentIntents created in the batch's time window, 100 per request; rows not seen are retrieved), or auto (list when the data makes it cheaper)."`
}

// check refuses Stripe flags that make no sense.
func (f stripeFlags) check() error {
	return checkPositiveDuration("--stripe-timeout", f.StripeTimeout)
}

// app carries what every command needs.
type app struct {
	ctx    context.Context
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
	cli    *cli
	// command is the selected command's path, e.g. "findings list".
	command string
	// clock is the time status and plan project from (the read
	// allocation's 30 days); tests set it.
	clock payrecon.Clock
}

func newApp(getenv func(string) string, stdout, stderr io.Writer) *app {
	return &app{getenv: getenv, stdout: stdout, stderr: stderr, clock: payrecon.SystemClock{}}
}

const description = `payrecon keeps a PostgreSQL payments table honest against Stripe: it finds every row where the
database and Stripe disagree, classifies the drift, records it once, and repairs the safe kinds
through the same idempotent code path that webhooks use; a person reviews the kinds that touch money.

Exit status: 0 success, 1 error, 2 bad usage or configuration, 3 the job's lease is held by another
process, 4 the sweep finished but some rows could not be verified.`

// flagVars are the values flag tags interpolate (${name}): defaults from
// the Go constants that define them, and help generated from the domain,
// so that neither is retyped as a literal.
var flagVars = kong.Vars{
	"job_default":         sweep.DefaultJob,
	"stuck_after_default": payrecon.DefaultStuckAfter,
	"http_addr_default":   service.HTTPAddrDefault,
	"admin_addr_default":  service.AdminAddrDefault,
	"stripe_api_base":     stripeapi.APIBaseDefault,
	"kinds":               kindList(),
}

func (a *app) run(ctx context.Context, args []string) (err error) {
	a.ctx = ctx
	a.cli = &cli{}
	exited := false
	parser, err := kong.New(a.cli,
		kong.Name("payrecon"),
		kong.Description(description),
		kong.Writers(a.stdout, a.stderr),
		kong.Exit(func(int) { exited = true }),
		kong.Resolvers(envResolver{a.getenv}),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, Summary: true}),
		flagVars,
	)
	if err != nil {
		return fmt.Errorf("build command line: %w", err)
	}
	kctx, err := parser.Parse(args)
	if exited { // --help or --version printed what was asked
		return nil
	}
	if err != nil {
		return usageError{err}
	}
	a.command = strings.TrimSpace(strings.ReplaceAll(kctx.Command(), "<", ""))
	a.logger = newLogger(a.stderr, a.cli.LogFormat, a.cli.LogLevel).With("command", a.command)
	return kctx.Run(a)
}

// envResolver makes kong read `env` tags through run's getenv instead of
// the process environment, so that tests control the environment. A value
// from getenv overrides what kong read from the process; an absent one falls
// back to the flag's default.
type envResolver struct{ getenv func(string) string }

func (r envResolver) Validate(*kong.Application) error { return nil }

func (r envResolver) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	if len(flag.Envs) == 0 {
		return nil, nil
	}
	for _, env := range flag.Envs {
		if v := r.getenv(env); v != "" {
			return v, nil
		}
	}
	if flag.HasDefault {
		return flag.Default, nil
	}
	if flag.IsBool() {
		return false, nil
	}
	return "", nil
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// openDB connects to DATABASE_URL.
func (a *app) openDB() (*pgxpool.Pool, error) {
	pool, err := postgres.Open(a.ctx, a.cli.DatabaseURL, postgres.OpenConfig{ApplicationName: postgres.ApplicationName(a.command)})
	if err != nil {
		return nil, configError{err}
	}
	return pool, nil
}

// openMigratedDB connects, with at most --db-max-conns connections, and
// checks the schema is current.
func (a *app) openMigratedDB() (*pgxpool.Pool, error) {
	if err := checkPositiveInt("--db-max-conns", a.cli.DBMaxConns); err != nil {
		return nil, err
	}
	pool, err := postgres.Open(a.ctx, a.cli.DatabaseURL, postgres.OpenConfig{
		ApplicationName: postgres.ApplicationName(a.command), MaxConns: int32(min(a.cli.DBMaxConns, math.MaxInt32))})
	if err != nil {
		return nil, configError{err}
	}
	if err := postgres.CheckMigrations(a.ctx, pool); err != nil {
		pool.Close()
		if errors.Is(err, postgres.ErrNotMigrated) {
			return nil, configError{fmt.Errorf("the database has no payrecon schema: run `payrecon migrate` first (or check DATABASE_URL)")}
		}
		if errors.Is(err, postgres.ErrMigrationsPending) {
			return nil, configError{fmt.Errorf("the database schema is not current: run `payrecon migrate` first")}
		}
		return nil, err
	}
	return pool, nil
}

// gateway builds the Stripe client; rateLimited (may be nil) hears about
// every 429 the client retries after.
func (a *app) gateway(f stripeFlags, rateLimited func(time.Duration)) (*stripeapi.Gateway, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	gw, err := stripeapi.New(stripeapi.Config{
		SecretKey: f.StripeSecretKey,
		APIBase:   f.StripeAPIBase,
		Timeout:   f.StripeTimeout,
		Logger:    a.logger.With("component", "stripe"),

		RateLimitedFunc: rateLimited,
	})
	if err != nil {
		return nil, configError{err}
	}
	return gw, nil
}

// checkStripe makes one request to prove the key works before any sweeping:
// a bad key must fail loudly even on an empty table. It asks for an intent
// that does not exist, so the expected answer is 404; an outage only warns
// (the sweep's outage handling takes over).
func (a *app) checkStripe(gw payrecon.Gateway) error {
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	_, err := gw.RetrieveIntent(ctx, "pi_payrecon_preflight_check")
	switch {
	case err == nil, errors.Is(err, payrecon.ErrNotFound):
		return nil
	case errors.Is(err, payrecon.ErrConfig):
		return err
	case a.ctx.Err() != nil:
		return a.ctx.Err()
	}
	a.logger.Warn("Stripe did not answer the start-up check; sweeping anyway", "error", err)
	return nil
}

func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// Errors that choose the exit status.
type (
	usageError  struct{ error }
	configError struct{ error }
	// incompleteError: the work finished but not all of it could be done
	// (rows left unverifiable).
	incompleteError struct{ error }
)

func (e usageError) Unwrap() error      { return e.error }
func (e configError) Unwrap() error     { return e.error }
func (e incompleteError) Unwrap() error { return e.error }

// exitCode prints err as one line and maps it to the documented status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var (
		ue usageError
		ce configError
		ie incompleteError
	)
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "payrecon: %s (see payrecon --help)\n", msg)
		return 2
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "payrecon: interrupted")
		return 130
	}
	fmt.Fprintf(stderr, "payrecon: %s\n", msg)
	switch {
	case errors.As(err, &ce), errors.Is(err, payrecon.ErrConfig):
		return 2
	case errors.Is(err, payrecon.ErrLeaseHeld):
		return 3
	case errors.As(err, &ie):
		return 4
	}
	return 1
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// insertOnlyRelay is a relay that only inserts delivery jobs and reads their
// state: the commands that queue repairs or show them, while a running
// `payrecon run` (or `relay`) applies them.
func (a *app) insertOnlyRelay(pool *pgxpool.Pool) (*relay.Relay, error) {
	rl, err := relay.New(pool, postgres.NewWriter(nil), relay.Config{InsertOnly: true, Logger: a.logger.With("component", "relay")})
	if err != nil {
		return nil, fmt.Errorf("repair delivery: %w", err)
	}
	return rl, nil
}

// closePool closes pool when the command returns; deferred as
// `defer closePool(pool)`. During a panic it does not close: pgxpool's Close
// waits for every connection to come back, and a panic can leave one
// checked out (a batch being read), so the process would hang there,
// deaf to SIGTERM, instead of crashing with the panic's message.
func closePool(pool *pgxpool.Pool) {
	if r := recover(); r != nil {
		panic(r)
	}
	pool.Close()
}
