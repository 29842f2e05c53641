// Package service is the long-running payrecon process (`payrecon run`):
// the continuous sweep (and its recent window), the events catch-up, the
// repair workers, the Stripe webhook endpoint on
// the public listener, the operator console, River's dashboard, metrics and
// health on the admin listener, wired together and stopped together.
//
// Only one replica sweeps a job at a time: the sweep waits for the job's
// lease (a row with a heartbeat, postgres.Lease), so a second replica serves
// webhooks and works repairs while it waits, and takes over the sweep as
// soon as the first one's session ends, or once its heartbeat is older than
// Config.LeaseTimeout (a frozen process). River elects its own leader for its maintenance.
//
// On SIGINT or SIGTERM (the end of Run's context) the service stops
// readiness first, lets the sweep finish and commit the batch in progress,
// lets in-flight HTTP requests finish, stops the repair workers after the
// commands they are applying, and returns nil.
package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"riverqueue.com/riverui"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/platform"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/riverjobs"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// Config configures the service.
type Config struct {
	// HTTPAddr is where the public HTTP server listens: the webhook and
	// health only (default 127.0.0.1:8080; port 0 picks a free one, see
	// Addr).
	HTTPAddr string
	// HTTPMaxConns caps the connections the public listener holds at once
	// (default HTTPMaxConnsDefault). At the cap a new connection closes the
	// oldest one that serves no request (silent since it connected, or idle
	// between requests); only when all are serving does it wait. A flood
	// of idle connections costs at most this many file descriptors and
	// does not keep a webhook out.
	HTTPMaxConns int
	// AdminAddr is where the admin HTTP server listens: the console, River's
	// dashboard, metrics and health (default AdminAddrDefault; port 0 picks
	// a free one, see AdminAddr). Without ConsolePassword it must be a
	// loopback address.
	AdminAddr string
	// ConsolePassword protects the console and River's dashboard; empty
	// leaves them open to whoever reaches AdminAddr.
	ConsolePassword string
	// Console tunes the console; its Password, Read, Actions, Logger, Clock
	// and StripeHealthFunc are set by the service.
	Console console.Config
	// MetricsPublic serves the admin listener's /metrics without a login
	// although ConsolePassword is set (--metrics-public); by default it then
	// needs the password (HTTP basic auth) or a console session.
	MetricsPublic bool
	// Sweep configures the continuous sweep; its Money checks (and
	// Money.Ignore, which the webhook's findings obey too) come from the
	// caller.
	Sweep sweep.Config
	// MoneyColumns are the local money columns the sweep reads
	// (postgres.DetectMoneyColumns); zero: none.
	MoneyColumns postgres.MoneyColumns
	// Accounts is the account column (postgres.DetectAccountColumn).
	// Found, the service sweeps a platform on Connect: every account its
	// own job, spread over every replica through River (package
	// platform), instead of the one leased sweep.
	Accounts postgres.AccountColumn
	// Sessions is the Checkout Session column
	// (postgres.DetectSessionColumn): found, session rows are checked
	// through their sessions and checkout.session.* events apply to them.
	Sessions postgres.SessionColumn
	// PlatformRPS caps the request rate summed over every account and
	// replica (--platform-rps; 0: platform.PlatformRPSDefault).
	PlatformRPS float64
	// MinCycles are accounts' minimum cycles stretched by the read
	// allocation (--read-share).
	MinCycles map[string]time.Duration
	// AccountGateway, when set, reads as one account instead of the Stripe
	// gateway's ForAccount (tests).
	AccountGateway platform.GatewayFunc
	// Events configures the events catch-up, which runs only when
	// Events.Interval is positive; its Limiter (the sweep's), Clock, Logger,
	// LeaseFunc and Registerer are set by the service.
	Events catchup.Config
	// EventSource, when set, is what the catch-up lists events from instead
	// of the Stripe gateway.
	EventSource payrecon.EventSource
	// RecentWindow, when positive, runs a second sweep job (the full job's
	// name plus payrecon.RecentJobSuffix, in list mode, with its own cursor
	// and lease, within the same rate budget) that re-verifies the rows
	// created within this window every RecentInterval.
	RecentWindow   time.Duration
	RecentInterval time.Duration
	// LeaseTimeout is how long a lease holder's heartbeat may be silent
	// before this replica takes its sweep (or catch-up) over
	// (--lease-timeout; default postgres.LeaseTimeoutDefault).
	LeaseTimeout time.Duration
	// RPS is the Stripe request budget per second (0: unlimited).
	RPS float64
	// Stripe configures the Stripe client; its Logger, Registerer and
	// RateLimitedFunc are set by the service.
	Stripe stripeapi.Config
	// Gateway, when set, is used instead of building one from Stripe.
	Gateway payrecon.Gateway
	// WebhookSecrets are the webhook signing secrets; none disables the
	// webhook endpoint (it answers 404).
	WebhookSecrets []string
	// Relay configures the repair workers.
	Relay relay.Config
	// RepairMode says what becomes of the repairs the sweep, the console's
	// rechecks and the events (webhooks, catch-up) decide on: applied
	// (apply, the zero value), held for an approval (review), or not queued
	// (off: findings only).
	RepairMode payrecon.RepairMode
	// Payouts configures the payouts check (off unless Payouts.Interval
	// is positive); the relay's Payouts jobs are set by the service.
	Payouts PayoutsConfig
	// ShutdownTimeout bounds each stage of the shutdown (default 20 s).
	ShutdownTimeout time.Duration
	// Logger receives the service's logs; nil discards them.
	Logger *slog.Logger
	// Clock is the time written to the database; default the system clock.
	Clock payrecon.Clock
	// SweepProgress, when set, hears about every sweep batch.
	SweepProgress sweep.ProgressFunc
	// Ready, when set, is called once the HTTP server listens.
	Ready func(addr string)
	// Timeouts bound every connection of both listeners; zero fields take
	// DefaultTimeouts.
	Timeouts Timeouts
}

// HTTPMaxConnsDefault is the public listener's default connection cap:
// far more than Stripe's deliveries need (a few at a time), far fewer than
// the process's file descriptors.
const HTTPMaxConnsDefault = 1000

// Timeouts bound what a client may hold of an HTTP listener: a slow header
// (ReadHeader), a slow body (Read covers header and body), a slow reader
// of the answer (Write: PublicWrite and AdminWrite), and an idle keep-alive
// connection (Idle). A client that exceeds one is disconnected.
type Timeouts struct {
	ReadHeader  time.Duration
	Read        time.Duration
	PublicWrite time.Duration
	AdminWrite  time.Duration
	Idle        time.Duration
}

// DefaultTimeouts: the public listener carries webhooks (a few kilobytes,
// answered in milliseconds); the admin one console pages, River's dashboard
// and scrapes, and the CSV export, which extends its own write deadline as
// it streams.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, PublicWrite: 30 * time.Second,
		AdminWrite: time.Minute, Idle: 2 * time.Minute}
}

func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts()
	for _, f := range []struct{ v, d *time.Duration }{
		{&t.ReadHeader, &d.ReadHeader}, {&t.Read, &d.Read}, {&t.PublicWrite, &d.PublicWrite},
		{&t.AdminWrite, &d.AdminWrite}, {&t.Idle, &d.Idle},
	} {
		if *f.v <= 0 {
			*f.v = *f.d
		}
	}
	return t
}

// Service is a configured payrecon process.
type Service struct {
	cfg      Config
	pool     *pgxpool.Pool
	log      *slog.Logger
	registry *prometheus.Registry
	sweeper  *sweep.Sweeper
	recent   *sweep.Sweeper
	platform *platform.Platform
	fatal    chan error
	catcher  *catchup.Catcher
	relay    *relay.Relay
	handler  http.Handler
	gateway  payrecon.Gateway
	limiter  *budget.Limiter
	ui       *riverui.Handler
	admin    http.Handler
	console  *console.Console
	sampler  *console.Sampler

	conns *prometheus.GaugeVec

	stopping   atomic.Bool
	migrations atomic.Int64 // unix nanos of the last successful migrations check
	addr       atomic.Value
	adminAddr  atomic.Value
}

// New builds the service on pool (which must be migrated).
func New(pool *pgxpool.Pool, cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := CheckAdminExposure(cfg.AdminAddr, cfg.ConsolePassword); err != nil {
		return nil, err
	}
	if err := cfg.Sweep.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, pool: pool, log: cfg.Logger, registry: prometheus.NewRegistry(), fatal: make(chan error, 1)}
	s.registerHTTPMetrics()
	gw, err := s.newGateway()
	if err != nil {
		return nil, err
	}
	writer := postgres.NewWriter(cfg.Clock)
	store, events := s.newStores(pool, writer)
	payouts, err := s.newPayouts(pool, gw)
	if err != nil {
		return nil, err
	}
	if payouts != nil {
		// payout.* events (webhook or catch-up) read their payout at once,
		// through the relay's River client (built below, before any event).
		events.PayoutFunc = func(ctx context.Context, tx pgx.Tx, account, payoutID, eventID string) error {
			return settlement.EnqueueRead(s.relay.Client())(ctx, tx, account, payoutID, eventID)
		}
	}
	caught := events.WithSource(payrecon.SourceEvents)
	if err := s.newRelay(pool, writer, store, gw, caught, payouts); err != nil {
		return nil, err
	}
	leaseFunc := s.newSweepers(pool, store, gw)
	s.registerCollector(pool)
	if err := s.newConsoleAndActions(pool, store, gw); err != nil {
		return nil, err
	}
	if err := s.newCatcher(pool, gw, caught, leaseFunc); err != nil {
		return nil, err
	}
	if err := s.newHTTP(events); err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills in the zero fields that have a default.
func (cfg Config) withDefaults() Config {
	if cfg.HTTPAddr == "" {
		cfg.HTTPAddr = HTTPAddrDefault
	}
	if cfg.HTTPMaxConns <= 0 {
		cfg.HTTPMaxConns = HTTPMaxConnsDefault
	}
	if cfg.AdminAddr == "" {
		cfg.AdminAddr = AdminAddrDefault
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	return cfg
}

// registerHTTPMetrics registers the process's and the listeners' metrics.
func (s *Service) registerHTTPMetrics() {
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "payrecon_http_connections",
		Help: "Connections the listener holds open now (public: at most payrecon_http_max_connections)."}, []string{"listener"})
	maxConns := prometheus.NewGauge(prometheus.GaugeOpts{Name: "payrecon_http_max_connections",
		Help: "The public listener's connection cap (--http-max-conns).", ConstLabels: prometheus.Labels{"listener": "public"}})
	maxConns.Set(float64(s.cfg.HTTPMaxConns))
	s.registry.MustRegister(s.conns, maxConns)
	s.conns.WithLabelValues("public")
	s.conns.WithLabelValues("admin")
}

// newGateway builds the rate budget and the Stripe gateway (Config.Gateway
// when set).
func (s *Service) newGateway() (payrecon.Gateway, error) {
	cfg := s.cfg
	s.limiter = budget.NewLimiter(cfg.RPS)
	gw := cfg.Gateway
	if gw == nil {
		sc := cfg.Stripe
		sc.Logger = cfg.Logger.With("component", "stripe")
		sc.Registerer = s.registry
		sc.RateLimitedFunc = s.limiter.OnRateLimited
		g, err := stripeapi.New(sc)
		if err != nil {
			return nil, err
		}
		gw = g
	}
	s.gateway = gw
	s.registry.MustRegister(budget.Collectors(s.limiter)...)
	return gw, nil
}

// newStores builds the sweep's store and the events' (webhook, catch-up).
// Under --repair-mode review their repairs are held by the relay, built
// after them (the stores and the events are copied before it exists: the
// platform's accounts, the catch-up's road).
func (s *Service) newStores(pool *pgxpool.Pool, writer *postgres.Writer) (*postgres.Store, *postgres.Events) {
	cfg := s.cfg
	hold := func(ctx context.Context, tx pgx.Tx, outboxIDs []int64) error { return s.relay.Hold(ctx, tx, outboxIDs) }
	store := postgres.NewStore(pool)
	store.RepairMode, store.HoldFunc = cfg.RepairMode, hold
	if cfg.MoneyColumns.Amount || cfg.MoneyColumns.Currency {
		store = store.WithMoneyColumns(cfg.MoneyColumns)
	}
	store = store.WithSessionColumn(cfg.Sessions)
	events := postgres.NewEvents(pool, writer, cfg.Clock)
	events.Sessions = cfg.Sessions
	events.Ignore = cfg.Sweep.Money.Ignore
	events.Accounts = cfg.Accounts
	events.RepairMode, events.HoldFunc = cfg.RepairMode, hold
	return store, events
}

// newRelay builds the relay, the process's one River client, with the
// platform's and the payouts check's jobs.
func (s *Service) newRelay(pool *pgxpool.Pool, writer *postgres.Writer, store *postgres.Store, gw payrecon.Gateway,
	caught *postgres.Events, payouts *settlement.Reconciler) error {
	cfg := s.cfg
	rc := cfg.Relay
	if cfg.Accounts.Found {
		p, err := s.newPlatform(pool, store, gw, caught)
		if err != nil {
			return err
		}
		s.platform = p
		rc.Jobs = p.Jobs()
		s.registry.MustRegister(p.Collectors()...)
	}
	rc.Logger = cfg.Logger.With("component", "relay")
	rc.Clock = cfg.Clock
	rc.Registerer = s.registry
	if rc.Workers == 0 {
		// The pool must have room for them (relay.Config.Workers).
		rc.Workers = max(2, min(relay.WorkersDefault, int(pool.Config().MaxConns)-6))
	}
	if payouts != nil {
		rc.Jobs = riverjobs.Merge(rc.Jobs, payouts.Jobs(cfg.Payouts.Interval))
	}
	rl, err := relay.New(pool, writer, rc)
	if err != nil {
		return err
	}
	s.relay = rl
	// The platform's account stores are copied from store when their
	// first batch runs, after this.
	store.EnqueueFunc = rl.EnqueueFunc()
	return nil
}

// newSweepers builds the sweep and its recent window; it returns the
// lease function the long-running jobs share.
func (s *Service) newSweepers(pool *pgxpool.Pool, store *postgres.Store, gw payrecon.Gateway) payrecon.LeaseFunc {
	cfg := s.cfg
	sc := cfg.Sweep
	sc.Limiter, sc.Clock, sc.Logger, sc.Registerer = s.limiter, cfg.Clock, cfg.Logger.With("component", "sweep"), s.registry
	sc.LeaseFunc = func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLeaseTimeout(ctx, pool, job, wait, cfg.LeaseTimeout)
	}
	s.sweeper = sweep.New(store, gw, sc)
	window := cfg.RecentWindow
	if window > 0 && cfg.Accounts.Found {
		cfg.Logger.Warn("--recent is not available on a platform's accounts (--account-column): off")
		window = 0
	}
	if window > 0 {
		rc := sc
		rc.Job = s.sweeper.Config().Job + payrecon.RecentJobSuffix
		rc.Mode = sweep.ModeList
		rc.MinCycle = cfg.RecentInterval
		if rc.MinCycle <= 0 {
			rc.MinCycle = -1
		}
		rc.Logger = cfg.Logger.With("component", "sweep", "window", window.String())
		s.recent = sweep.New(store.Recent(window), gw, rc)
	}
	return sc.LeaseFunc
}

// registerCollector registers the database's figures (Monitor.Figures).
func (s *Service) registerCollector(pool *pgxpool.Pool) {
	cfg := s.cfg
	collector := postgres.NewCollector(postgres.NewMonitor(pool), relay.Kind, cfg.Clock, cfg.Logger.With("component", "metrics"))
	collector.NotifyKind = relay.NotifyKind
	if cfg.Accounts.Found {
		collector.Accounts = cmp.Or(cfg.Sweep.Job, sweep.DefaultJob)
	}
	s.registry.MustRegister(collector)
}

// newConsoleAndActions builds River's dashboard, the finding actions and
// the console. The console's actions are the CLI's (package action): a
// recheck reads the row through the sweep's own store (its money columns,
// its account) and judges it with a sweeper of its own on the same
// gateway and rate budget.
func (s *Service) newConsoleAndActions(pool *pgxpool.Pool, store *postgres.Store, gw payrecon.Gateway) error {
	cfg := s.cfg
	ui, err := s.relay.UIHandler(relay.UIPrefix)
	if err != nil {
		return err
	}
	s.ui = ui
	rcfg := cfg.Sweep
	rcfg.Limiter, rcfg.Clock, rcfg.Logger = s.limiter, cfg.Clock, cfg.Logger.With("component", "console")
	ac := action.Config{Store: store, Accounts: cfg.Accounts, Gateway: gw, Sweep: rcfg, Relay: s.relay, Clock: cfg.Clock}
	if sg, ok := gw.(*stripeapi.Gateway); ok && cfg.Accounts.Found {
		ac.AccountGateway = func(account string) payrecon.Gateway { return sg.ForAccount(account, nil) }
	}
	actions, err := action.New(pool, ac)
	if err != nil {
		return err
	}
	s.console, s.sampler, err = s.newConsole(pool, actions)
	return err
}

// newCatcher builds the events catch-up, when it is on.
func (s *Service) newCatcher(pool *pgxpool.Pool, gw payrecon.Gateway, caught *postgres.Events, leaseFunc payrecon.LeaseFunc) error {
	cfg := s.cfg
	if cfg.Events.Interval <= 0 {
		return nil
	}
	src := cfg.EventSource
	if src == nil {
		es, ok := gw.(payrecon.EventSource)
		if !ok {
			return errors.New("the events catch-up needs a Stripe gateway that lists events")
		}
		src = es
	}
	ec := cfg.Events
	ec.Limiter, ec.Clock, ec.Logger, ec.Registerer = s.limiter, cfg.Clock, cfg.Logger.With("component", "events"), s.registry
	ec.LeaseFunc = leaseFunc
	// The catch-up's road into the writer (caught): its transitions are
	// recorded with source "events". Under Connect it is the
	// platform's own account's; each connected account's is a chain of
	// the platform's.
	s.catcher = catchup.New(src, caught, postgres.NewEventCursors(pool), ec)
	return nil
}

// newHTTP builds the two listeners' handlers.
func (s *Service) newHTTP(events *postgres.Events) error {
	cfg := s.cfg
	deps := httpapi.Deps{
		Logger:      cfg.Logger.With("component", "http"),
		Clock:       cfg.Clock,
		Events:      events,
		Webhook:     httpapi.WebhookConfig{Secrets: cfg.WebhookSecrets},
		Metrics:     s.console.ProtectMetrics(promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{Registry: s.registry}), cfg.MetricsPublic),
		Ready:       http.HandlerFunc(s.handleReady),
		Queue:       s.console.Protect(s.ui),
		QueuePrefix: relay.UIPrefix,
		Console:     s.console,
	}
	switch {
	case cfg.RepairMode.Holds():
		cfg.Logger.Info("repair mode review: repairs and the events that would move a payment are held until approved (payrecon repairs list, payrecon repairs approve, the console)")
	case !cfg.RepairMode.Queues():
		cfg.Logger.Info("repair mode off: findings only; no repair is queued and no event moves a payment")
	}
	if len(cfg.WebhookSecrets) == 0 {
		cfg.Logger.Warn("STRIPE_WEBHOOK_SECRET is not set: the webhook endpoint is disabled (404)")
	}
	if err := deps.Validate(); err != nil {
		return err
	}
	s.handler = httpapi.NewServer(deps)
	s.admin = httpapi.NewAdminServer(deps)
	return nil
}

// Gateway returns the Stripe gateway the sweep uses.
func (s *Service) Gateway() payrecon.Gateway { return s.gateway }

// Registry returns the service's metrics registry.
func (s *Service) Registry() *prometheus.Registry { return s.registry }

// Addr returns the address the public HTTP server listens on, once it does.
func (s *Service) Addr() string {
	a, _ := s.addr.Load().(string)
	return a
}

// AdminHandler returns the admin listener's handler (for tests and for
// embedding the service in another server).
func (s *Service) AdminHandler() http.Handler { return s.admin }

// AdminAddr returns the address the admin HTTP server listens on, once it
// does.
func (s *Service) AdminAddr() string {
	a, _ := s.adminAddr.Load().(string)
	return a
}

// handleReady: 200 when the database answers, the schema is current and the
// service is not shutting down; 503 with the reason otherwise.
func (s *Service) handleReady(w http.ResponseWriter, r *http.Request) {
	fail := func(reason string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "not ready:", reason)
	}
	if s.stopping.Load() {
		fail("shutting down")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		fail("database unreachable")
		return
	}
	if last := s.migrations.Load(); time.Since(time.Unix(0, last)) > 30*time.Second {
		if err := postgres.CheckMigrations(ctx, s.pool); err != nil {
			fail("migrations pending: run `payrecon migrate`")
			return
		}
		s.migrations.Store(time.Now().UnixNano())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintln(w, "ready")
}

// Run serves until ctx ends (returns nil after a clean shutdown) or a
// component fails (returns its error after stopping the others): a
// configuration error from Stripe, an outage longer than the sweep's
// patience, a listener that cannot bind. The components run in one
// errgroup: the first to fail cancels the group's context, which starts
// the shutdown of all of them.
func (s *Service) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (--http-addr): %w", s.cfg.HTTPAddr, err)
	}
	adminLn, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s (--admin-addr): %w", s.cfg.AdminAddr, err)
	}
	s.addr.Store(ln.Addr().String())
	s.adminAddr.Store(adminLn.Addr().String())
	// Anyone who reaches the webhook reaches the public listener: a cap on
	// its connections bounds the file descriptors a flood takes, and idle
	// ones make room for new ones (capListener). The admin one is counted.
	pub := newCapListener(ln, s.cfg.HTTPMaxConns, s.conns.WithLabelValues("public"))
	adm := newCapListener(adminLn, 0, s.conns.WithLabelValues("admin"))
	errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	to := s.cfg.Timeouts.withDefaults()
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read,
		WriteTimeout: to.PublicWrite, IdleTimeout: to.Idle, ErrorLog: errorLog, ConnState: pub.connState}
	adminSrv := &http.Server{Handler: s.admin, ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read,
		WriteTimeout: to.AdminWrite, IdleTimeout: to.Idle, ErrorLog: errorLog, ConnState: adm.connState}

	g, gctx := errgroup.WithContext(ctx)
	if err := s.relay.Start(gctx); err != nil {
		ln.Close()
		adminLn.Close()
		return fmt.Errorf("start repair workers: %w", err)
	}
	if err := s.ui.Start(gctx); err != nil {
		ln.Close()
		adminLn.Close()
		_ = s.relay.Stop(context.WithoutCancel(ctx))
		return fmt.Errorf("start queue dashboard: %w", err)
	}
	serve := func(sv *http.Server, l net.Listener, what string) func() error {
		return func() error {
			if err := sv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
	}
	g.Go(serve(srv, pub, "http server"))
	g.Go(serve(adminSrv, adm, "admin http server"))
	g.Go(func() error {
		_ = s.sampler.Run(gctx) // returns when gctx ends; a failed sample is logged
		return nil
	})
	if s.platform != nil {
		g.Go(func() error { return s.platform.Run(gctx) })
		g.Go(func() error {
			select {
			case err := <-s.fatal:
				return err
			case <-gctx.Done():
				return nil
			}
		})
	} else {
		g.Go(func() error {
			// The sweep returns after its batch in progress commits (or is
			// discarded whole), nil when gctx ended.
			if err := s.sweeper.Run(gctx, s.cfg.SweepProgress); err != nil {
				return fmt.Errorf("sweep: %w", err)
			}
			return nil
		})
	}
	if s.recent != nil {
		g.Go(func() error {
			if err := s.recent.Run(gctx, nil); err != nil {
				return fmt.Errorf("recent window sweep: %w", err)
			}
			return nil
		})
	}
	if s.catcher != nil {
		g.Go(func() error {
			// Returns nil when gctx ends, an error only for a configuration
			// error (a key without Events: Read).
			return s.catcher.Run(gctx)
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		s.stopping.Store(true)
		s.log.Info("shutting down: finishing the batch in progress, in-flight requests and repairs")
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		defer cancel()
		for _, sv := range []*http.Server{srv, adminSrv} {
			if err := sv.Shutdown(sctx); err != nil {
				s.log.Warn("http server did not finish in time; abandoning in-flight requests", "error", err)
				_ = sv.Close()
			}
		}
		return nil
	})
	s.log.Info("payrecon is running", "http_addr", s.Addr(), "admin_addr", s.AdminAddr(),
		"console_url", "http://"+s.AdminAddr()+console.Prefix, "job", s.sweeper.Config().Job, "rps", s.cfg.RPS,
		"events_interval", s.cfg.Events.Interval, "recent", s.cfg.RecentWindow, "recent_interval", s.cfg.RecentInterval,
		"payouts_interval", s.cfg.Payouts.Interval)
	if s.console.Open() {
		s.log.Warn("the console has no password: anyone who reaches the admin address acts as an operator; set PAYRECON_CONSOLE_PASSWORD to require a login",
			"admin_addr", s.AdminAddr())
	}
	if s.cfg.Ready != nil {
		s.cfg.Ready(s.Addr())
	}

	err = g.Wait()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if serr := s.relay.Stop(sctx); serr != nil {
		s.log.Warn("repair workers did not stop cleanly", "error", serr)
	}
	s.log.Info("stopped")
	return err
}
