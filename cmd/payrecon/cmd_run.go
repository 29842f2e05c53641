package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// rescueSlack is how much later than --repair-rescue-after a repair job
// held by a dead replica may be applied by another, with River v0.51's
// fixed timings: its rescuer looks for stuck jobs every 30 s (on the
// leader; a dead leader is replaced within about 16 s, and the new one looks
// at once), a rescued job waits for its retry backoff (1 s ±10 % after a
// first attempt), River's scheduler makes it available within 5 s, and a
// worker fetches it within 1 s. 30 + 1.1 + 5 + 1 rounded up. README and
// TestRepairRescueBoundAfterSIGKILL hold the same figure.
const rescueSlack = 40 * time.Second

type runCmd struct {
	stripeFlags
	sweepFlags
	consoleFlags
	publicListenFlags
	minCycleFlag
	Workers int `default:"10" help:"Repair commands applied at once (at most --db-max-conns minus 10)."`
	maxAttemptsFlag
	RescueAfter time.Duration `name:"repair-rescue-after" default:"30s" help:"A repair job still running after this long belongs to a dead replica: River rescues it and another replica applies it, within this plus 40 s (River's rescuer runs every 30 s); each attempt is cut off at a third of this."`
	eventsIntervalFlag
	Recent         time.Duration `name:"recent" default:"0s" help:"Re-verify the rows created within this window, e.g. 72h (list mode, a second sweep job with its own cursor and lease, within the same budget), every --recent-interval, besides the full cycle. 0 (the default): off."`
	RecentInterval time.Duration `name:"recent-interval" default:"5m" help:"How often the --recent window is re-verified. 0: off."`
	retainFlags
	notifyFlags
	pruneIntervalFlag
	payoutsIntervalFlag
	settleAfterFlag
}

func (c *runCmd) Run(a *app) error {
	cfg, err := c.sweepConfig(a)
	if err != nil {
		return err
	}
	rc, err := c.relayConfig()
	if err != nil {
		return err
	}
	password, err := c.consoleFlags.password()
	if err != nil {
		return err
	}
	if err := service.CheckAdminExposure(c.AdminAddr, password); err != nil {
		return configError{err}
	}
	c.logConfiguration(a, cfg)
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	sc, sessions, err := c.serviceConfig(a, pool, cfg, rc, password)
	if err != nil {
		return err
	}
	svc, err := service.New(pool, sc)
	if err != nil {
		return configError{err}
	}
	if err := a.checkStripe(svc.Gateway()); err != nil {
		return err
	}
	// The sweep reads every intent with its latest charge expanded (Charges:
	// Read); the catch-up lists events (Events: Read).
	if err := a.checkAccess(svc.Gateway(), stripeapi.AccessNeeds{Charges: true, Events: c.EventsInterval > 0, Sessions: sessions.Found}); err != nil {
		return err
	}
	err = svc.Run(a.ctx)
	if errors.Is(err, context.Canceled) && a.ctx.Err() != nil {
		return nil // SIGINT/SIGTERM: a clean stop
	}
	return err
}

// sweepConfig checks run's flags and returns the sweep's configuration;
// --workers is lowered to what the connection budget holds.
func (c *runCmd) sweepConfig(a *app) (sweep.Config, error) {
	cfg, err := c.sweepFlags.config()
	if err != nil {
		return cfg, err
	}
	switch {
	case c.MinCycle < 0:
		return cfg, usageError{fmt.Errorf("--min-cycle must not be negative, got %s (0 means no minimum)", c.MinCycle)}
	case c.MinCycle == 0:
		cfg.MinCycle = -1 // no minimum (a zero Config field would mean the default)
	default:
		cfg.MinCycle = c.MinCycle
	}
	if err := checkDetectionFlags(c.EventsInterval, c.Recent, c.RecentInterval); err != nil {
		return cfg, err
	}
	for _, err := range []error{
		c.stripeFlags.check(),
		checkPositiveInt("--workers", c.Workers),
		checkPositiveInt("--max-attempts", c.MaxAttempts),
		checkPositiveInt("--http-max-conns", c.HTTPMaxConns),
		checkListenAddr("--http-addr", c.HTTPAddr),
		checkListenAddr("--admin-addr", c.AdminAddr),
		checkSecretList("STRIPE_WEBHOOK_SECRET (--stripe-webhook-secret)", c.WebhookSecret),
	} {
		if err != nil {
			return cfg, err
		}
	}
	if cfg.Job == catchup.JobDefault || strings.HasSuffix(cfg.Job, payrecon.RecentJobSuffix) {
		return cfg, usageError{fmt.Errorf("--job %q is reserved (the events catch-up is %q; recent windows end in %q): choose another name", cfg.Job, catchup.JobDefault, payrecon.RecentJobSuffix)}
	}
	if c.PruneInterval < 0 {
		return cfg, usageError{fmt.Errorf("--prune-interval must not be negative, got %s (0 means never)", c.PruneInterval)}
	}
	if c.PayoutsInterval < 0 || (c.PayoutsInterval > 0 && c.PayoutsInterval < time.Second) {
		return cfg, usageError{fmt.Errorf("--payouts-interval must be 0 (off) or at least 1s, got %s", c.PayoutsInterval)}
	}
	if a.cli.DBMaxConns < runConnMin {
		return cfg, usageError{fmt.Errorf("--db-max-conns %d is too few for run: it needs at least %d (%d besides the repair workers)", a.cli.DBMaxConns, runConnMin, runConnReserve)}
	}
	if w, lowered := workersWithin(c.Workers, a.cli.DBMaxConns, runConnReserve); lowered {
		a.logger.Warn("fewer repair workers than --workers: the connection budget holds no more", "workers", c.Workers, "db_max_conns", a.cli.DBMaxConns, "effective_workers", w)
		c.Workers = w
	}
	return cfg, nil
}

// relayConfig is the relay's configuration: workers, attempts, rescue,
// prune and notifications.
func (c *runCmd) relayConfig() (relay.Config, error) {
	rc, err := c.retainFlags.relayConfig(relay.Config{Workers: c.Workers, MaxAttempts: c.MaxAttempts,
		RescueStuckJobsAfter: c.RescueAfter, JobTimeout: c.RescueAfter / 3, PruneInterval: c.PruneInterval})
	if err != nil {
		return rc, err
	}
	if c.PruneInterval == 0 {
		rc.PruneInterval = -1 // never (a zero Config field would mean the default)
	}
	if rc.Notify, err = c.notifyFlags.config(); err != nil {
		return rc, err
	}
	if c.RescueAfter < 3*time.Second {
		return rc, usageError{fmt.Errorf("--repair-rescue-after must be at least 3s, got %s", c.RescueAfter)}
	}
	return rc, nil
}

// logConfiguration logs the effective configuration, secrets redacted,
// from the flag groups' settings.
func (c *runCmd) logConfiguration(a *app, cfg sweep.Config) {
	a.logger.Info("configuration", logAttrs(a.cli.databaseSettings(), c.stripeFlags.settings(), c.publicListenFlags.settings(),
		c.consoleFlags.settings(), []setting{
			{"job", "--job", cfg.Job}, {"batch", "--batch", c.Batch}, {"grace", "--grace", c.Grace}, {"rps", "--rps", c.RPS},
			{"concurrency", "--concurrency", c.Concurrency}, {"mode", "--mode", c.Mode}, {"min_cycle", "--min-cycle", c.MinCycle},
			{"workers", "--workers", c.Workers}, {"max_attempts", "--max-attempts", c.MaxAttempts},
			{"db_max_conns", "PAYRECON_DB_MAX_CONNS / --db-max-conns", a.cli.DBMaxConns},
			{"events_interval", "PAYRECON_EVENTS_INTERVAL / --events-interval", c.EventsInterval},
			{"recent", "--recent", c.Recent}, {"recent_interval", "--recent-interval", c.RecentInterval},
		}, c.pruneIntervalFlag.settings(), c.retainFlags.settings(), c.moneyFlags.settings(cfg.Money.Ignore), []setting{
			{"account_column", "PAYRECON_ACCOUNT_COLUMN / --account-column", c.AccountColumn},
			{"platform_rps", "PAYRECON_PLATFORM_RPS / --platform-rps", c.PlatformRPS},
			{"stuck_after", "PAYRECON_STUCK_AFTER / --stuck-after", cfg.StuckAfter.String()},
			{"payouts_interval", "PAYRECON_PAYOUTS_INTERVAL / --payouts-interval", c.PayoutsInterval},
			{"settle_after", "PAYRECON_SETTLE_AFTER / --settle-after", postgres.FormatRetention(time.Duration(c.SettleAfter))},
			{"verified_refresh", "PAYRECON_VERIFIED_REFRESH / --verified-refresh", c.VerifiedRefresh},
		}, c.repairModeFlag.settings())...)
	a.logger.Info("notifications", c.notifyFlags.describe()...)
}

// serviceConfig reads what the database says of payments (the money,
// account and session columns, the read allocation) and builds the
// service's configuration.
func (c *runCmd) serviceConfig(a *app, pool *pgxpool.Pool, cfg sweep.Config, rc relay.Config, password string) (service.Config, postgres.SessionColumn, error) {
	cols, err := a.moneyColumns(pool, c.moneyColumnFlags)
	if err != nil {
		return service.Config{}, postgres.SessionColumn{}, err
	}
	cfg.Money = cols.Checks(cfg.Money.Ignore)
	accounts, err := a.accountColumn(pool, c.accountColumnFlag)
	if err != nil {
		return service.Config{}, postgres.SessionColumn{}, err
	}
	sessions, err := a.sessionColumn(pool, c.sessionColumnFlag)
	if err != nil {
		return service.Config{}, postgres.SessionColumn{}, err
	}
	minCycles, err := a.readAllocation(pool, accounts, cfg, c.ReadShare)
	if err != nil {
		return service.Config{}, postgres.SessionColumn{}, err
	}
	if m, ok := minCycles[""]; ok && !accounts.Found {
		cfg.MinCycle = m
	}
	platformRPS := c.PlatformRPS
	if platformRPS == 0 {
		platformRPS = -1 // no cap (a zero Config field would mean the default)
	}
	recent := c.Recent
	if c.RecentInterval == 0 {
		recent = 0
	}
	payouts, err := a.payoutsAccess(c.stripeFlags, c.PayoutsInterval)
	if err != nil {
		return service.Config{}, postgres.SessionColumn{}, err
	}
	return service.Config{
		HTTPAddr:        c.HTTPAddr,
		HTTPMaxConns:    c.HTTPMaxConns,
		AdminAddr:       c.AdminAddr,
		ConsolePassword: password,
		MetricsPublic:   c.MetricsPublic,
		Sweep:           cfg,
		MoneyColumns:    cols,
		Accounts:        accounts,
		Sessions:        sessions,
		PlatformRPS:     platformRPS,
		MinCycles:       minCycles,
		Events:          catchup.Config{Interval: c.EventsInterval},
		RecentWindow:    recent,
		RecentInterval:  c.RecentInterval,
		LeaseTimeout:    c.LeaseTimeout,
		RPS:             c.RPS,
		Stripe: stripeapi.Config{
			SecretKey: c.StripeSecretKey,
			APIBase:   c.StripeAPIBase,
			Timeout:   c.StripeTimeout,
		},
		WebhookSecrets: splitList(c.WebhookSecret),
		Relay:          rc,
		RepairMode:     c.mode(),
		Payouts:        service.PayoutsConfig{Interval: payouts, SettleAfter: time.Duration(c.SettleAfter)},
		Logger:         a.logger,
	}, sessions, nil
}

func contextWithoutCancel(a *app) context.Context { return context.WithoutCancel(a.ctx) }
