package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// Sizes of the demo's moving parts. The pool is kept small so that a demo
// fits beside a test suite on a server with the default max_connections.
const (
	poolConns       = 16
	relayWorkers    = 4
	notifyWorkers   = 2
	webhookWorkers  = 4
	sweepConcurrent = 8
	pollInterval    = 50 * time.Millisecond
	progressEvery   = 250 * time.Millisecond
	// stuckAfter: when commands are left unprocessed with no delivery job
	// in flight for this long, the drain stops waiting and the report says
	// so.
	stuckAfter = 3 * time.Second
)

// same reports whether two states are equal.
func (s rowState) same(o rowState) bool {
	return s.status == o.status && s.version == o.version && s.updatedAt.Equal(o.updatedAt)
}

// runner plays one scenario on one database.
type runner struct {
	cfg   Config
	log   *slog.Logger
	dbURL string

	pool     *pgxpool.Pool
	sim      *stripesim.Server
	simClock shiftClock
	plan     *plan
	secret   string
	// shop receives the notifications; writer is the canonical writer of
	// the phases before the service (its transitions queue their
	// notifications too).
	shop   *shop
	writer *postgres.Writer
	// ids[i] is the payments id of plan row i; byID maps back.
	ids  []int64
	byID map[int64]int
	// snap is every row as it stood before the service started.
	snap map[int64]rowState
	// accounts is payments' account column (Config.Accounts); not Found
	// otherwise.
	accounts postgres.AccountColumn
	// sessions is payments' Checkout Session column.
	sessions postgres.SessionColumn

	rep Report
}

// rowState is what "touched" compares.
type rowState struct {
	status    payrecon.LocalStatus
	version   int64
	updatedAt time.Time
}

func (r *runner) run(ctx context.Context) (Report, error) {
	start := time.Now()
	r.rep = Report{Seed: r.cfg.Seed, Payments: r.cfg.Payments, GraceOff: true}
	err := r.play(ctx)
	r.rep.Timings.Total = time.Since(start)
	return r.rep, err
}

func (r *runner) play(ctx context.Context) error {
	t := time.Now()
	pool, err := postgres.Open(ctx, r.dbURL, postgres.OpenConfig{ApplicationName: postgres.ApplicationName("demo"), MaxConns: poolConns})
	if err != nil {
		return fmt.Errorf("open the demo database: %w", err)
	}
	defer pool.Close()
	r.pool = pool
	if _, err := postgres.Migrate(ctx, pool, quiet(r.log)); err != nil {
		return fmt.Errorf("migrate the demo database: %w", err)
	}
	// The demo's application keeps the order's money (payrecon never adds
	// these columns; it compares them when they are there).
	if _, err := pool.Exec(ctx, queries.Get("add_money_columns")); err != nil {
		return fmt.Errorf("add the demo's money columns: %w", err)
	}
	if _, err := pool.Exec(ctx, queries.Get("add_session_column")); err != nil {
		return fmt.Errorf("add the demo's session column: %w", err)
	}
	if r.sessions, err = postgres.DetectSessionColumn(ctx, pool, postgres.SessionColumnDefault); err != nil {
		return err
	}
	if !r.sessions.Found {
		return fmt.Errorf("the demo's session column is not used: %s", r.sessions.Problem)
	}
	if r.cfg.Accounts > 0 {
		if err := r.addAccountColumn(ctx); err != nil {
			return err
		}
	}
	sim, err := stripesim.Start(stripesim.Config{Seed: r.cfg.Seed, Logger: quiet(r.log), Clock: &r.simClock})
	if err != nil {
		return fmt.Errorf("start the Stripe simulator: %w", err)
	}
	defer sim.Close()
	r.sim = sim
	r.secret = fmt.Sprintf("whsec_payrecon_demo_%d", r.cfg.Seed)
	if r.plan, err = newPlan(r.cfg.Payments, r.cfg.Seed, time.Now(), r.cfg.Span); err != nil {
		return err
	}
	if err := r.plan.spread(r.cfg.Accounts, r.cfg.Seed); err != nil {
		return err
	}
	r.rep.OrphanIntents = len(r.plan.orphans)
	if r.shop, err = startShop(fmt.Sprintf("payrecon_demo_shop_%d", r.cfg.Seed)); err != nil {
		return err
	}
	defer r.shop.close(ctx)
	r.writer = postgres.NewWriter(nil)
	if _, err := relay.New(pool, r.writer, relay.Config{InsertOnly: true, Notify: r.shop.notifyConfig(), Logger: quiet(r.log)}); err != nil {
		return fmt.Errorf("notifications: %w", err)
	}
	r.rep.Timings.Setup = time.Since(t)

	t = time.Now()
	r.log.Info("seeding payments and PaymentIntents", "payments", len(r.plan.rows), "orphan_intents", len(r.plan.orphans),
		"seed", r.cfg.Seed, "stripe_simulator", sim.URL())
	if err := r.seed(ctx); err != nil {
		return err
	}
	r.rep.Timings.Seed = time.Since(t)

	t = time.Now()
	if err := r.markPaidByBuggyApp(ctx); err != nil {
		return err
	}
	// The webhook phase plays in the past (see preServiceAge); the live
	// phase at the real time.
	r.simClock.set(-preServiceAge)
	err = r.webhooks(ctx)
	r.simClock.set(0)
	if err != nil {
		return err
	}
	r.rep.Timings.Webhooks = time.Since(t)

	if err := r.snapshot(ctx); err != nil {
		return err
	}

	t = time.Now()
	total, err := r.runService(ctx)
	r.rep.Timings.Service = time.Since(t)
	if err != nil {
		return err
	}
	r.rep.Sweep.Rows = total.Scanned
	r.rep.Sweep.Batches = total.Batches
	r.rep.Sweep.Verdicts = total.Counts
	if secs := r.rep.Sweep.Duration.Seconds(); secs > 0 {
		r.rep.Sweep.RowsPerSecond = float64(total.Scanned) / secs
	}
	st := sim.Stats()
	r.rep.Sweep.StripeRequests = st.Total()
	r.rep.Sweep.StripeByEndpoint = st.Requests
	if r.rep.Platform != nil {
		r.rep.Platform.WrongAccountRequests = st.WrongAccount
	}
	if err := r.collectNotifications(ctx); err != nil {
		return err
	}
	t = time.Now()
	if err := r.settle(ctx); err != nil {
		return err
	}
	r.rep.Timings.Settle = time.Since(t)
	return r.collect(ctx)
}

// seed inserts the payments (pending, in creation order, so ids follow
// time) and stores their PaymentIntents and the orphans in the simulator.
func (r *runner) seed(ctx context.Context) error {
	rows := make([][]any, len(r.plan.rows))
	columns := []string{"order_id", "stripe_payment_intent_id", "stripe_checkout_session_id", "status", "created_at", "updated_at", "amount", "currency"}
	for i, pr := range r.plan.rows {
		amount, currency := pr.localMoney()
		var intent, session *string
		if pr.session() {
			s := pr.sessionID()
			session = &s
		} else {
			intent = &r.plan.rows[i].intentID
		}
		rows[i] = []any{fmt.Sprintf("order_%07d", pr.index+1), intent, session, string(payrecon.StatusPending), pr.created, pr.created, amount, currency}
		if r.accounts.Found {
			var acct *string // NULL: the platform's own
			if a := r.plan.accountOf(i); a != "" {
				acct = &a
			}
			rows[i] = append(rows[i], acct)
		}
	}
	if r.accounts.Found {
		columns = append(columns, r.accounts.Column)
	}
	if _, err := r.pool.CopyFrom(ctx, pgx.Identifier{"payments"}, columns, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("seed %d payments: %w", len(rows), err)
	}
	res, err := r.pool.Query(ctx, queries.Get("payment_ids"))
	if err != nil {
		return fmt.Errorf("read seeded payment ids: %w", err)
	}
	byIntent := make(map[string]int64, len(rows))
	var (
		id     int64
		intent string
	)
	if _, err := pgx.ForEachRow(res, []any{&id, &intent}, func() error { byIntent[intent] = id; return nil }); err != nil {
		return fmt.Errorf("read seeded payment ids: %w", err)
	}
	r.ids = make([]int64, len(r.plan.rows))
	r.byID = make(map[int64]int, len(r.plan.rows))
	for i, pr := range r.plan.rows {
		key := pr.intentID
		if pr.session() {
			key = fmt.Sprintf("order_%07d", pr.index+1)
		}
		id, ok := byIntent[key]
		if !ok {
			return fmt.Errorf("seeded payment for %s is missing", key)
		}
		r.ids[i], r.byID[id] = id, i
	}

	var intents []stripesim.Intent
	var sessions []stripesim.Session
	for i, pr := range r.plan.rows {
		status := payrecon.IntentRequiresPaymentMethod
		switch {
		case pr.role == roleSessionMissing:
			continue
		case pr.session():
			// The session only: its intent is created when the customer
			// pays (moveSession). An open one expires a day from now.
			sessions = append(sessions, stripesim.Session{ID: pr.sessionID(), Created: pr.created,
				ExpiresAt: time.Now().Add(24 * time.Hour), Account: r.plan.accountOf(i)})
			continue
		}
		switch pr.role {
		case roleMissingExternally:
			continue
		case roleUnknownStatus:
			status = UnknownStripeStatus
		}
		intents = append(intents, stripesim.Intent{ID: pr.intentID, Status: status, Created: pr.created,
			Amount: pr.amount(), Currency: "usd", Account: r.plan.accountOf(i)})
	}
	for i, o := range r.plan.orphans {
		intents = append(intents, stripesim.Intent{ID: o.intentID, Status: o.status, Created: o.created,
			Amount: 1000 + int64(i%10)*100, Currency: "usd", Account: r.plan.accounts[o.account]})
	}
	if err := r.sim.Seed(len(intents), func(i int) stripesim.Intent { return intents[i] }); err != nil {
		return fmt.Errorf("seed %d PaymentIntents: %w", len(intents), err)
	}
	if err := r.sim.SeedSessions(len(sessions), func(i int) stripesim.Session { return sessions[i] }); err != nil {
		return fmt.Errorf("seed %d Checkout Sessions: %w", len(sessions), err)
	}
	var stuck []int64
	for i, pr := range r.plan.rows {
		if pr.role == roleStuck {
			stuck = append(stuck, r.ids[i])
		}
	}
	if _, err := r.pool.Exec(ctx, queries.Get("seed_inflight"), pgx.StrictNamedArgs{
		"ids": stuck, "status": string(payrecon.IntentRequiresCapture), "since": time.Now().Add(-stuckSince),
	}); err != nil {
		return fmt.Errorf("seed the stuck rows' first observation: %w", err)
	}
	return nil
}

// markPaidByBuggyApp marks the paid_locally_not_externally payments paid
// through the canonical writer, as an application with a bug would (say, on
// the redirect back from checkout instead of on the webhook).
func (r *runner) markPaidByBuggyApp(ctx context.Context) error {
	w := r.writer
	for i, pr := range r.plan.rows {
		if pr.role != rolePaidNotTaken && pr.role != rolePaidCanceled {
			continue
		}
		err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
			res, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: r.ids[i]})
			if err == nil && res.Outcome != payrecon.Applied {
				err = fmt.Errorf("outcome %s", res.Outcome)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("mark payment %d paid as a buggy app would: %w", r.ids[i], err)
		}
	}
	return nil
}

// webhooks moves the intents in the simulator and delivers their events to
// the webhook handler the service uses, on a listener of its own, before the
// service starts: no delivery races the sweep.
func (r *runner) webhooks(ctx context.Context) error {
	sends, wrep, err := moveIntents(r.sim, r.plan)
	r.rep.Webhooks = wrep
	if err != nil {
		return err
	}
	events := postgres.NewEvents(r.pool, r.writer, nil)
	events.Accounts, events.Sessions = r.accounts, r.sessions
	deps := httpapi.Deps{
		Logger:  quiet(r.log).With("component", "http"),
		Events:  events,
		Webhook: httpapi.WebhookConfig{Secrets: r.secrets()},
	}
	if err := deps.Validate(); err != nil {
		return fmt.Errorf("webhook handler: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for webhooks: %w", err)
	}
	to := service.DefaultTimeouts()
	srv := &http.Server{Handler: httpapi.NewServer(deps), ReadHeaderTimeout: to.ReadHeader, ReadTimeout: to.Read,
		WriteTimeout: to.PublicWrite, IdleTimeout: to.Idle}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		<-served
	}()

	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = webhookWorkers
	client := &http.Client{Timeout: 30 * time.Second, Transport: transport}
	defer client.CloseIdleConnections()
	d := &deliverer{sim: r.sim, url: "http://" + ln.Addr().String() + "/webhooks/stripe", secret: r.secret, connectSecret: r.connectSecret(), client: client}
	r.log.Info("delivering webhooks", "events", wrep.Events, "dropped", wrep.Dropped, "duplicated", wrep.Duplicated,
		"reordered", wrep.Reordered, "endpoint", d.url)
	if err := d.deliver(ctx, sends, webhookWorkers, &r.rep.Webhooks); err != nil {
		return fmt.Errorf("deliver webhooks: %w", err)
	}
	return nil
}

// snapshot records every row, and counts the rows the webhooks did not
// leave in the state the scenario expects.
func (r *runner) snapshot(ctx context.Context) error {
	snap, err := r.readRows(ctx)
	if err != nil {
		return err
	}
	r.snap = snap
	specs := roleSpecs()
	for i, pr := range r.plan.rows {
		s := snap[r.ids[i]]
		wantStatus, wantVersion := pr.expectedBefore()
		if s.status != wantStatus || s.version != wantVersion {
			r.rep.WrongState++
			r.rep.WrongStateSamples = sample(r.rep.WrongStateSamples, fmt.Sprintf("payment %d (%s): %s v%d after the webhooks, want %s v%d",
				r.ids[i], specs[pr.role].name, s.status, s.version, wantStatus, wantVersion))
		}
	}
	return nil
}

func (r *runner) readRows(ctx context.Context) (map[int64]rowState, error) {
	res, err := r.pool.Query(ctx, queries.Get("payment_states"))
	if err != nil {
		return nil, fmt.Errorf("read payments: %w", err)
	}
	out := make(map[int64]rowState, len(r.plan.rows))
	var (
		id     int64
		status string
		s      rowState
	)
	if _, err := pgx.ForEachRow(res, []any{&id, &status, &s.version, &s.updatedAt}, func() error {
		s.status = payrecon.LocalStatus(status)
		out[id] = s
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read payments: %w", err)
	}
	return out, nil
}

// cycleWatch follows the embedded service's sweep through its progress
// callback: rows swept, when the live rows are passed, when the cycle
// completes.
type cycleWatch struct {
	swept   atomic.Int64
	wrapped atomic.Bool
	// wrappedAt is when the cycle completed (on a platform, every
	// account's), in Unix nanoseconds.
	wrappedAt atomic.Int64
	cycle     chan sweep.CycleReport
	passed    chan int
	passOnce  sync.Once
	// liveEnd: the live rows are passed once the cycle has swept this many
	// rows (on a platform, once every account's cycle is done).
	liveEnd  int
	accounts bool
}

func newCycleWatch(liveEnd int, accounts bool) *cycleWatch {
	return &cycleWatch{cycle: make(chan sweep.CycleReport, 1), passed: make(chan int, 1), liveEnd: liveEnd, accounts: accounts}
}

// progress is the sweep's progress callback (sweep.ProgressFunc).
func (w *cycleWatch) progress(b sweep.BatchReport, total sweep.CycleReport) {
	if w.wrapped.Load() {
		return // after the cycle, recheck batches report totals of their own
	}
	w.swept.Store(int64(total.Scanned))
	if total.Scanned >= w.liveEnd && (!w.accounts || b.Wrapped) {
		w.passOnce.Do(func() { w.passed <- total.Scanned })
	}
	if b.Wrapped {
		w.wrappedAt.Store(time.Now().UnixNano())
		w.wrapped.Store(true)
		w.cycle <- total
	}
}

// runService runs the real service until its first sweep cycle completes
// and the repair queue drains, then stops it and waits for a clean stop. It
// returns the cycle's totals.
func (r *runner) runService(ctx context.Context) (sweep.CycleReport, error) {
	w := newCycleWatch(r.plan.live[len(r.plan.live)-1]+1, r.accounts.Found)
	progress := w.progress
	var (
		ready = make(chan struct{})
		once  sync.Once
	)
	sc, err := r.serviceConfig(ctx, progress, func(string) { once.Do(func() { close(ready) }) })
	if err != nil {
		return sweep.CycleReport{}, err
	}
	svc, err := service.New(r.pool, sc)
	if err != nil {
		return sweep.CycleReport{}, fmt.Errorf("build the service: %w", err)
	}
	r.sim.ResetStats()
	svcCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- svc.Run(svcCtx) }()
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-runErr
	}
	defer stop() //nolint:errcheck // the error path already has its error

	expected := r.plan.injected()
	repairs := expected[payrecon.KindMissedSuccess] + expected[payrecon.KindMissedCancel]
	mon := r.monitor(ctx, &w.swept, &w.wrapped, repairs)
	defer mon.stop()
	if r.accounts.Found {
		// The accounts' sweeps run as River job chains, not the one
		// sweeper whose progress the callback reports: their cursors say
		// how far they are.
		pctx, pcancel := context.WithCancel(ctx)
		defer pcancel()
		go r.watchAccounts(pctx, progress)
	}

	failed := func(what string, err error) (sweep.CycleReport, error) {
		if err == nil {
			err = errors.New("stopped without an error")
		}
		return sweep.CycleReport{}, fmt.Errorf("the service %s: %w", what, err)
	}
	select {
	case <-ready:
	case err := <-runErr:
		stopped = true
		return failed("stopped before it was ready", err)
	case <-ctx.Done():
		return sweep.CycleReport{}, ctx.Err()
	}
	began := time.Now()
	r.log.Info("service running: sweeping until one cycle completes, then draining the repair queue",
		"http_addr", svc.Addr(), "console_url", "http://"+svc.AdminAddr()+"/console/", "rows", len(r.plan.rows), "batch", r.cfg.Batch,
		"grace", "off (every webhook landed before the sweep)")
	// A platform's lag is its worst account's, known once an account's
	// job has a cursor; its accounts' figures are there from the start.
	metric := "payrecon_reconciliation_lag_seconds"
	if r.accounts.Found {
		metric = "payrecon_platform_accounts_behind"
	}
	if err := checkListeners(ctx, svc.Addr(), svc.AdminAddr(), metric); err != nil {
		return sweep.CycleReport{}, err
	}
	if r.cfg.TamperInSync > 0 {
		if err := r.tamper(ctx); err != nil {
			return sweep.CycleReport{}, err
		}
	}

	// The live phase, once the sweep has passed the live rows.
	select {
	case n := <-w.passed:
		if err := r.livePhase(ctx, svc.Addr(), n); err != nil {
			return sweep.CycleReport{}, err
		}
	case err := <-runErr:
		stopped = true
		return failed("stopped before the sweep passed the live rows", err)
	case <-ctx.Done():
		return sweep.CycleReport{}, ctx.Err()
	}

	var total sweep.CycleReport
	select {
	case total = <-w.cycle:
	case err := <-runErr:
		stopped = true
		return failed("stopped before the cycle completed", err)
	case <-ctx.Done():
		return sweep.CycleReport{}, fmt.Errorf("waiting for the sweep cycle (%d of %d rows swept): %w", w.swept.Load(), len(r.plan.rows), ctx.Err())
	}
	if err := r.afterCycle(ctx, total, began, w, runErr, &stopped); err != nil {
		return total, err
	}
	mon.stop()
	if err := stop(); err != nil {
		return total, fmt.Errorf("the service did not stop cleanly: %w", err)
	}
	r.log.Info("service stopped cleanly")
	return total, nil
}

// afterCycle reports the completed cycle, drains the repair queue and
// waits until every notification is delivered.
func (r *runner) afterCycle(ctx context.Context, total sweep.CycleReport, began time.Time, w *cycleWatch, runErr chan error, stopped *bool) error {
	r.rep.Sweep.Duration = time.Since(began)
	if r.accounts.Found { // the live phase came after the accounts' cycles
		r.rep.Sweep.Duration = time.Unix(0, w.wrappedAt.Load()).Sub(began)
	}
	r.log.Info("sweep cycle complete", "rows", total.Scanned, "duration", r.rep.Sweep.Duration.Round(time.Millisecond),
		"new_findings", total.NewFindings, "repair_commands", total.Commands)
	cycleDone := time.Now()
	if err := r.drain(ctx, runErr, stopped); err != nil {
		return err
	}
	r.rep.Repairs.DrainAfterCycle = time.Since(cycleDone)
	return r.waitDelivered(ctx)
}

// serviceConfig is the embedded service's configuration: the demo's money
// columns, one cycle then idle, no grace (every webhook has landed), the
// simulator without a rate limit; progress and ready are the demo's.
func (r *runner) serviceConfig(ctx context.Context, progress sweep.ProgressFunc, ready func(string)) (service.Config, error) {
	cols, err := postgres.DetectMoneyColumns(ctx, r.pool, "amount", "currency")
	if err != nil {
		return service.Config{}, err
	}
	stuckAfter, err := payrecon.ParseStuckAfter(payrecon.DefaultStuckAfter)
	if err != nil {
		return service.Config{}, err
	}
	return service.Config{
		HTTPAddr:     "127.0.0.1:0",
		AdminAddr:    r.cfg.AdminAddr,
		MoneyColumns: cols,
		Sweep: sweep.Config{
			Money:       cols.Checks(nil),
			StuckAfter:  stuckAfter,
			Batch:       r.cfg.Batch,
			Grace:       -1, // every webhook has already landed
			Mode:        sweep.ModeAuto,
			Concurrency: sweepConcurrent,
			MinCycle:    24 * time.Hour, // one cycle, then idle
			MaxOutage:   time.Minute,
		},
		RPS:            0,
		Events:         catchup.Config{Interval: liveEventsInterval},
		Stripe:         stripeapi.Config{SecretKey: r.sim.SecretKey(), APIBase: r.sim.URL()},
		WebhookSecrets: r.secrets(),
		Relay:          relay.Config{Workers: relayWorkers, Notify: r.shop.notifyConfig()},
		Logger:         quiet(r.log),
		SweepProgress:  progress,
		Ready:          ready,
		Accounts:       r.accounts,
		Sessions:       r.sessions,
		PlatformRPS:    -1, // the simulator has no rate limit
	}, nil
}

// drain waits until every repair command is processed and no delivery job
// is left to run, or until commands stay unprocessed with nothing left to
// run them (reported, not an error).
func (r *runner) drain(ctx context.Context, runErr <-chan error, stopped *bool) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var idleSince time.Time
	for {
		var (
			unprocessed int
			active      bool
		)
		err := r.pool.QueryRow(ctx, queries.Get("repair_queue"), pgx.StrictNamedArgs{"kind": relay.Kind}).Scan(&unprocessed, &active)
		if err != nil {
			return fmt.Errorf("read the repair queue: %w", err)
		}
		switch {
		case unprocessed == 0 && !active:
			return nil
		case active:
			idleSince = time.Time{}
		case idleSince.IsZero():
			idleSince = time.Now()
		case time.Since(idleSince) > stuckAfter:
			r.log.Warn("repair commands left unprocessed with no delivery job to run them", "unprocessed", unprocessed)
			return nil
		}
		select {
		case <-tick.C:
		case err := <-runErr:
			*stopped = true
			if err == nil {
				err = errors.New("stopped without an error")
			}
			return fmt.Errorf("the service stopped while the repair queue drained: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the repair queue to drain (%d commands unprocessed): %w", unprocessed, ctx.Err())
		}
	}
}

// tamper changes in-sync rows behind the canonical writer's back: the
// self-test that the check can fail.
func (r *runner) tamper(ctx context.Context) error {
	var ids []int64
	for i, pr := range r.plan.rows {
		if len(ids) == r.cfg.TamperInSync {
			break
		}
		if pr.role == rolePaid {
			ids = append(ids, r.ids[i])
		}
	}
	r.log.Warn("self-test: touching in-sync rows behind the canonical writer's back; the demo must FAIL", "rows", len(ids))
	if _, err := r.pool.Exec(ctx, queries.Get("tamper"), pgx.StrictNamedArgs{"ids": ids}); err != nil {
		return fmt.Errorf("tamper with %d in-sync rows: %w", len(ids), err)
	}
	return nil
}

// progressMonitor reports Progress a few times a second from one goroutine.
type progressMonitor struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

func (r *runner) monitor(ctx context.Context, swept *atomic.Int64, wrapped *atomic.Bool, repairs int) *progressMonitor {
	m := &progressMonitor{quit: make(chan struct{}), done: make(chan struct{})}
	if r.cfg.Progress == nil {
		close(m.done)
		return m
	}
	emit := func() {
		var applied int
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_ = r.pool.QueryRow(qctx, queries.Get("repairs_applied")).Scan(&applied)
		phase := "sweep"
		if wrapped.Load() {
			phase = "drain"
		}
		r.cfg.Progress(Progress{Phase: phase, Swept: int(swept.Load()), Rows: len(r.plan.rows), Repaired: applied, Repairs: repairs})
	}
	go func() {
		defer close(m.done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		emit()
		for {
			select {
			case <-m.quit:
				emit()
				return
			case <-t.C:
				emit()
			}
		}
	}()
	return m
}

// stop emits the last Progress and waits for the goroutine.
func (m *progressMonitor) stop() {
	m.once.Do(func() { close(m.quit) })
	<-m.done
}

// sample appends s to a list of examples kept short.
func sample(list []string, s string) []string {
	if len(list) < 5 {
		list = append(list, s)
	}
	return list
}
