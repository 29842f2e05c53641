// Package platform sweeps a platform on Stripe Connect: one payments table
// for many connected accounts (--account-column). Each account is its own
// sweep job (payrecon.AccountJob: the base job for the platform's own rows,
// base/acct_… for a connected account's), with its own cursor, lag, cycles
// and recheck queue, and every Stripe request for its rows carries its
// Stripe-Account.
//
// The accounts' work is spread over every running `payrecon run` replica
// through River, the job queue payrecon already runs on: an account's sweep
// is a chain of River jobs (SweepKind), one batch each (or, while batches
// are quick, as many as fit in a slice of two seconds). The job that runs a
// batch inserts the next one when the batch is done, unique per account, so
// one batch per account is ever waiting; River's FIFO interleaves the
// accounts (a big account never starves the small ones), any replica takes
// the next batch, and River's rescuer gives a dead replica's batch to
// another. A batch commits only while its River job is still running in
// its attempt (postgres.JobFence): a replica that froze and was rescued
// writes nothing when it wakes. The cursor's compare-and-set stays the
// safety net. A periodic job (DiscoverKind, on River's leader) starts the
// chain of every account that has none: new accounts within
// DiscoverInterval of their first row, and any chain lost with a replica
// that died between a batch and its successor.
//
// Budgets: --rps is each account's, --platform-rps the sum over every
// account and replica: each replica takes an even share of it, recounting
// the replicas every couple of seconds (postgres.Replicas). A 429 for one
// account slows that account only.
//
// Connected accounts' events are caught up the same way (EventsKind), one
// chain per account with its own cursor (events/acct_…); the platform's own
// events stay with the service's leased catch-up.
package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/riverjobs"
	"github.com/payrecon/payrecon/sweep"
)

// River job kinds and queue.
const (
	// SweepKind is one batch of one account's sweep.
	SweepKind = "payrecon_sweep_account"
	// EventsKind is one catch-up round of one connected account's events.
	EventsKind = "payrecon_events_account"
	// DiscoverKind is the periodic pass that starts every account's chains.
	DiscoverKind = "payrecon_discover_accounts"
	// Queue is the River queue the accounts' work runs on.
	Queue = "accounts"
)

// Unlimited, as Config.PlatformRPS, leaves the platform's requests
// uncapped (--platform-rps 0; a zero field means PlatformRPSDefault).
const Unlimited float64 = -1

// Defaults of Config.
const (
	PlatformRPSDefault      = 50
	WorkersDefault          = 4
	DiscoverIntervalDefault = 30 * time.Second
	// batchTime is how long one batch should take at its account's
	// budget: well under River's rescue bound (relay's
	// RescueStuckJobsAfter, 30 s), so that a batch is never taken for a
	// dead worker's while it runs.
	batchTime = 8 * time.Second
	// slice is how long one River job of an account goes on running
	// batches that finish quickly, before it hands the account's turn to
	// the next job in the queue.
	slice = 2 * time.Second
	// jobTimeout bounds one batch's River job.
	jobTimeout = 25 * time.Second
	// heartbeat is how often a replica recounts the replicas.
	heartbeat = 2 * time.Second
)

// GatewayFunc returns a gateway whose every request is made on behalf of
// account ("" for the platform's own), telling onRateLimited about its
// 429s.
type GatewayFunc func(account string, onRateLimited func(retryAfter time.Duration)) payrecon.Gateway

// EventSourceFunc is GatewayFunc for the events catch-up.
type EventSourceFunc func(account string, onRateLimited func(retryAfter time.Duration)) payrecon.EventSource

// Config configures a platform's account sweeps. Job, Accounts, Store,
// Gateway and Pool are required.
type Config struct {
	// Job is the base job name (sweep.DefaultJob).
	Job string
	// Accounts is the account column (postgres.DetectAccountColumn).
	Accounts postgres.AccountColumn
	// Store is the sweep store (with its money columns and repair
	// EnqueueFunc); each account gets a copy scoped to its rows.
	Store *postgres.Store
	// Gateway reads as one account.
	Gateway GatewayFunc
	// Sweep is the template of every account's sweeper: Batch, Mode,
	// Grace, Concurrency, MinCycle, Money, StuckAfter, IntentMetadata…; its
	// Job, Limiter, LeaseFunc, Registerer are set per account.
	Sweep sweep.Config
	// RPS is each account's request budget (--rps; 0: unlimited).
	RPS float64
	// MinCycles are accounts' minimum cycles longer than Sweep.MinCycle:
	// the read allocation's (--read-share, payrecon.Allocate).
	MinCycles map[string]time.Duration
	// PlatformRPS caps the sum over every account and replica
	// (--platform-rps; 0: PlatformRPSDefault, Unlimited: no cap).
	PlatformRPS float64
	// Workers is how many account batches this replica runs at once
	// (default WorkersDefault).
	Workers int
	// DiscoverInterval is how often new accounts are looked for (default
	// DiscoverIntervalDefault).
	DiscoverInterval time.Duration
	// Events, when Events.Interval is positive, catches up each connected
	// account's events: Source lists them, Processor (the webhook's, with
	// its Accounts set) applies them.
	Events    catchup.Config
	Source    EventSourceFunc
	Processor payrecon.EventProcessor
	// Pool is the database.
	Pool *pgxpool.Pool
	// Replica names this process among the replicas (default its
	// application name).
	Replica string
	// FatalFunc is told of a configuration error no account can work
	// around (the platform's key rejected): the service stops.
	FatalFunc func(error)
	Clock     payrecon.Clock
	Logger    *slog.Logger
}

// Platform runs a platform's accounts' sweeps on River.
type Platform struct {
	cfg      Config
	budget   *budget.Limiter // this replica's share of --platform-rps
	replicas *postgres.Replicas
	metrics  *metrics

	mu       sync.Mutex
	sweepers map[string]*sweep.Sweeper
	limiters map[string]*budget.Limiter // each sweeper's, for its retries
	catchers map[string]*catchup.Catcher
	evLimits map[string]*budget.Limiter // each catcher's
	shares   int
}

// New returns the platform's sweeps; register Jobs on the relay's River
// client and call Run.
func New(cfg Config) (*Platform, error) {
	switch {
	case cfg.Job == "":
		return nil, errors.New("platform: no job")
	case !cfg.Accounts.Found:
		return nil, errors.New("platform: payments has no account column")
	case cfg.Store == nil || cfg.Gateway == nil || cfg.Pool == nil:
		return nil, errors.New("platform: a store, a gateway and a pool are required")
	case cfg.Events.Interval > 0 && (cfg.Source == nil || cfg.Processor == nil):
		return nil, errors.New("platform: the events catch-up needs a source and a processor")
	}
	if err := cfg.Sweep.Validate(); err != nil {
		return nil, fmt.Errorf("platform: the accounts' sweep: %w", err)
	}
	if err := cfg.Events.Validate(); err != nil {
		return nil, fmt.Errorf("platform: the accounts' events catch-up: %w", err)
	}
	if cfg.PlatformRPS == 0 {
		cfg.PlatformRPS = PlatformRPSDefault
	}
	if cfg.Workers <= 0 {
		cfg.Workers = WorkersDefault
	}
	if cfg.DiscoverInterval <= 0 {
		cfg.DiscoverInterval = DiscoverIntervalDefault
	}
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Replica == "" {
		cfg.Replica = cfg.Pool.Config().ConnConfig.RuntimeParams["application_name"]
	}
	if cfg.Replica == "" {
		cfg.Replica = postgres.ApplicationName("run")
	}
	p := &Platform{cfg: cfg, budget: budget.NewLimiter(cfg.PlatformRPS), replicas: postgres.NewReplicas(cfg.Pool, cfg.Replica),
		sweepers: map[string]*sweep.Sweeper{}, limiters: map[string]*budget.Limiter{},
		catchers: map[string]*catchup.Catcher{}, evLimits: map[string]*budget.Limiter{}, shares: 1, metrics: newMetrics()}
	// Until Run has counted the replicas and they have counted this one,
	// it does not know its share: it holds the budget (join), at most a
	// couple of heartbeats if Run never comes.
	p.budget.Hold(time.Now().Add(2 * heartbeat))
	return p, nil
}

// Budget returns this replica's share of the platform budget.
func (p *Platform) Budget() *budget.Limiter { return p.budget }

// Jobs are the platform's River workers, queue and periodic discovery, to
// give the relay (relay.Config.Jobs).
func (p *Platform) Jobs() riverjobs.Set {
	return riverjobs.Set{
		Register: func(w *river.Workers) error {
			if err := river.AddWorkerSafely(w, &sweepWorker{p: p}); err != nil {
				return err
			}
			if err := river.AddWorkerSafely(w, &eventsWorker{p: p}); err != nil {
				return err
			}
			return river.AddWorkerSafely(w, &discoverWorker{p: p})
		},
		Queues: map[string]int{Queue: p.cfg.Workers},
		Periodic: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(p.cfg.DiscoverInterval),
			func() (river.JobArgs, *river.InsertOpts) { return DiscoverArgs{}, nil },
			&river.PeriodicJobOpts{ID: DiscoverKind, RunOnStart: true})},
	}
}

// Run keeps this replica's share of the platform budget until ctx ends:
// it heartbeats, recounts the replicas alive and divides --platform-rps by
// them. It returns nil when ctx ends.
func (p *Platform) Run(ctx context.Context) error {
	defer func() {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.replicas.Leave(lctx)
	}()
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for first := true; ; first = false {
		n, err := p.replicas.Beat(ctx, 3*heartbeat)
		switch {
		case err == nil:
			p.setShares(n)
			if first {
				p.join(n)
			}
		case ctx.Err() == nil:
			p.cfg.Logger.Warn("replica heartbeat failed; keeping the budget share", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// join releases the budget New held once this replica may spend its
// share: a heartbeat (and a margin) after its first, by when every other
// replica has counted it and spends no more than its own share of the
// new count. Even a replica that counts itself alone waits: others may be
// starting at the same moment, each not yet seeing the others' rows.
func (p *Platform) join(n int) {
	wait := heartbeat + heartbeat/4
	p.budget.Hold(time.Now().Add(wait))
	p.cfg.Logger.Info("joining the replicas: the budget share waits for them to count this one", "replicas", n, "wait", wait)
}

// setShares divides the platform budget among n replicas.
func (p *Platform) setShares(n int) {
	n = max(n, 1)
	p.mu.Lock()
	changed := p.shares != n
	p.shares = n
	p.mu.Unlock()
	if p.cfg.PlatformRPS > 0 {
		p.budget.SetBudget(p.cfg.PlatformRPS / float64(n))
	}
	if changed {
		p.cfg.Logger.Info("replicas share the platform budget", "replicas", n, "share_rps", p.cfg.PlatformRPS/float64(n))
	}
	p.metrics.replicas.Store(int64(n))
}

// perAccountRate is what one account's batch can expect to spend: its own
// budget, within this replica's share divided among the batches it runs at
// once.
func (p *Platform) perAccountRate() float64 {
	rate := p.cfg.RPS
	if p.cfg.PlatformRPS > 0 {
		p.mu.Lock()
		share := p.cfg.PlatformRPS / float64(p.shares) / float64(p.cfg.Workers)
		p.mu.Unlock()
		if rate <= 0 || share < rate {
			rate = share
		}
	}
	return rate
}

// sweeper returns account's sweeper (kept between batches: its list
// cache and its budget are the account's) and its budget.
func (p *Platform) sweeper(account string) (*sweep.Sweeper, *budget.Limiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.sweepers[account]; ok {
		return s, p.limiters[account], nil
	}
	lim := budget.NewLimiter(p.cfg.RPS).Within(p.budget)
	cfg := p.cfg.Sweep
	cfg.Job = payrecon.AccountJob(p.cfg.Job, account)
	cfg.Limiter, cfg.LeaseFunc, cfg.Registerer = lim, nil, nil
	cfg.Clock = p.cfg.Clock
	cfg.Logger = p.cfg.Logger.With("job", cfg.Job)
	if m := p.cfg.MinCycles[account]; m > cfg.MinCycle {
		cfg.MinCycle = m
	}
	s, err := sweep.New(p.cfg.Store.ForAccount(p.cfg.Accounts, account), p.cfg.Gateway(account, lim.OnRateLimited), cfg)
	if err != nil {
		return nil, nil, err
	}
	p.sweepers[account], p.limiters[account] = s, lim
	return s, lim, nil
}

// batchRows sizes one batch to about batchTime at the account's expected
// rate in retrieve mode (list mode needs a request per 100 rows).
func (p *Platform) batchRows() int {
	full := p.cfg.Sweep.Batch
	if full <= 0 {
		full = sweep.DefaultConfig().Batch
	}
	rate := p.perAccountRate()
	if rate <= 0 || p.cfg.Sweep.Mode == sweep.ModeList {
		return full
	}
	return min(full, max(10, int(rate*batchTime.Seconds())))
}

// SweepArgs are one batch of one account's sweep.
type SweepArgs struct {
	// Job is the account's sweep job (payrecon.AccountJob): one batch per
	// job waits at a time.
	Job     string `json:"job" river:"unique"`
	Account string `json:"account"`
	// CycleAt, when set, is when the next cycle may start (the last one
	// began MinCycle earlier): before it the job only rechecks due rows.
	CycleAt time.Time `json:"cycle_at,omitzero"`
	// Pause is the last outage pause, doubled while Stripe stays down.
	Pause time.Duration `json:"pause,omitempty"`
}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return SweepKind }

// InsertOpts implements river.JobArgsWithInsertOpts: one batch per account
// running or waiting (a batch completes itself in the transaction that
// inserts its successor).
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: active}}
}

var active = []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
	rivertype.JobStateRetryable, rivertype.JobStateScheduled, rivertype.JobStateRunning}

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	p *Platform
}

// Timeout implements river.Worker.
func (w *sweepWorker) Timeout(*river.Job[SweepArgs]) time.Duration { return jobTimeout }

// Work runs one batch of the account (more while they are quick, up to a
// slice) and inserts the next job.
func (w *sweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	p, a := w.p, job.Args
	if acct, ok := payrecon.AccountOfJob(p.cfg.Job, a.Job); !ok || acct != a.Account {
		return river.JobCancel(fmt.Errorf("sweep job %q is not account %q's of %q", a.Job, a.Account, p.cfg.Job))
	}
	next := SweepArgs{Job: a.Job, Account: a.Account, CycleAt: a.CycleAt}
	holder, err := postgres.LeaseHolderOf(ctx, p.cfg.Pool, a.Job)
	if err != nil {
		return err
	}
	if holder != nil { // `scan --once` has the account: come back later
		return chain(ctx, p, job, next, p.cfg.Clock.Now().Add(5*time.Second))
	}
	s, lim, err := p.sweeper(a.Account)
	if err != nil {
		return err
	}
	s.SetBatch(p.batchRows())
	now := p.cfg.Clock.Now()
	// The batch commits only under its River job's attempt, and its
	// requests' retries spend the account's budget too.
	bctx := budget.WithRetries(postgres.WithJobFence(ctx, postgres.JobFence{JobID: job.ID, Attempt: job.Attempt}), lim)
	var rep sweep.BatchReport
	if !a.CycleAt.IsZero() && now.Before(a.CycleAt) {
		rep, err = s.RunRechecks(bctx)
	} else {
		next.CycleAt = time.Time{}
		rep, err = s.RunBatch(bctx)
		// Quick batches (an account with budget to spare) go on in the
		// same job for up to a slice: a River job costs a fetch and a
		// completion, about as much as a small batch itself, and the
		// account's turn in the queue is a slice of time, not of rows.
		for err == nil && !rep.Wrapped && ctx.Err() == nil && p.cfg.Clock.Now().Sub(now) < slice {
			p.metrics.batch(rep)
			rep, err = s.RunBatch(bctx)
		}
	}
	at := p.cfg.Clock.Now()
	var sys *sweep.SystemicFailureError
	switch {
	case err == nil:
		p.metrics.batch(rep)
		if rep.Wrapped {
			next.CycleAt = rep.CycleStartedAt.Add(max(s.Config().MinCycle, 0))
			p.cfg.Logger.Info("account cycle complete", "job", a.Job)
		}
		if !next.CycleAt.IsZero() && at.Before(next.CycleAt) {
			at = next.CycleAt
			if due, err := s.NextRecheck(ctx); err == nil && !due.IsZero() && due.Before(at) {
				at = due
			}
		}
	case errors.As(err, &sys):
		next.Pause = min(max(2*a.Pause, s.Config().OutagePause), s.Config().OutagePauseMax)
		at = at.Add(next.Pause)
		p.cfg.Logger.Warn("stripe outage: account sweep paused", "job", a.Job, "pause", next.Pause, "error", err)
	case errors.Is(err, payrecon.ErrLeaseLost):
		// Rescued: another worker runs this job now; this one wrote nothing.
		p.cfg.Logger.Warn("account batch discarded: its job was given to another worker", "job", a.Job, "error", err)
		return nil
	case errors.Is(err, payrecon.ErrConcurrentRun):
		at = at.Add(time.Second)
	case errors.Is(err, payrecon.ErrConfig):
		var ce *payrecon.ConfigError
		if errors.As(err, &ce) && ce.StatusCode == 401 && p.cfg.FatalFunc != nil {
			p.cfg.FatalFunc(fmt.Errorf("account sweep %s: %w", a.Job, err))
		}
		p.cfg.Logger.Error("account sweep refused by Stripe; retrying in 10 minutes", "job", a.Job, "error", err)
		at = at.Add(10 * time.Minute)
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return err // River retries it; discovery restarts the chain if it gives up
	}
	return chain(ctx, p, job, next, at)
}

// chain completes the running job (River's JobCompleteTx) and inserts its
// successor, due at at (available at once when at has passed), in one
// transaction: the chain never forks nor
// breaks (River's unique jobs count a running job, so the successor could
// not be inserted while this one runs). It does nothing when the job is no
// longer this attempt's (River's rescuer gave it to another worker, whose
// chain it is now).
func chain[T river.JobArgs](ctx context.Context, p *Platform, job *river.Job[T], next river.JobArgs, at time.Time) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		if err := postgres.CheckJobFence(ctx, tx, postgres.JobFence{JobID: job.ID, Attempt: job.Attempt}); err != nil {
			return err
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return err
		}
		// A successor due now is inserted available: River inserts any
		// job with a ScheduledAt as scheduled, and only its scheduler
		// (every 5 s) makes it available, which would idle every account
		// that long between two batches.
		var opts river.InsertOpts
		if at.After(p.cfg.Clock.Now()) {
			opts.ScheduledAt = at
		}
		_, err := client.InsertTx(ctx, tx, next, &opts)
		return err
	})
	switch {
	case errors.Is(err, payrecon.ErrLeaseLost):
		return nil
	case err != nil:
		return fmt.Errorf("chain job %d to its next: %w", job.ID, err)
	}
	return nil
}

// EventsArgs are one catch-up round of one connected account's events.
type EventsArgs struct {
	Job     string `json:"job" river:"unique"`
	Account string `json:"account"`
}

// Kind implements river.JobArgs.
func (EventsArgs) Kind() string { return EventsKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (EventsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 25, UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: active}}
}

// EventsJob names a connected account's catch-up job.
func EventsJob(base, account string) string { return payrecon.AccountJob(base, account) }

type eventsWorker struct {
	river.WorkerDefaults[EventsArgs]
	p *Platform
}

// Timeout implements river.Worker.
func (w *eventsWorker) Timeout(*river.Job[EventsArgs]) time.Duration { return jobTimeout }

// Work runs one round and inserts the next, an interval later (at once
// when the round stopped before the newest event).
func (w *eventsWorker) Work(ctx context.Context, job *river.Job[EventsArgs]) error {
	p, a := w.p, job.Args
	if p.cfg.Events.Interval <= 0 {
		return nil
	}
	c, lim, err := p.catcher(a.Account)
	if err != nil {
		return err
	}
	rep, err := c.Round(budget.WithRetries(ctx, lim))
	at := p.cfg.Clock.Now().Add(p.cfg.Events.Interval)
	switch {
	case err == nil && !rep.UpToDate:
		at = p.cfg.Clock.Now()
	case errors.Is(err, payrecon.ErrConfig):
		p.cfg.Logger.Error("account events refused by Stripe; retrying in 10 minutes", "job", a.Job, "error", err)
		at = p.cfg.Clock.Now().Add(10 * time.Minute)
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		p.cfg.Logger.Warn("account events round failed; next round as usual", "job", a.Job, "error", err)
	}
	return chain(ctx, p, job, EventsArgs{Job: a.Job, Account: a.Account}, at)
}

// catcher returns a connected account's catcher and its budget.
func (p *Platform) catcher(account string) (*catchup.Catcher, *budget.Limiter, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.catchers[account]; ok {
		return c, p.evLimits[account], nil
	}
	lim := budget.NewLimiter(p.cfg.RPS).Within(p.budget)
	cfg := p.cfg.Events
	cfg.Job = EventsJob(catchup.JobDefault, account)
	cfg.Limiter, cfg.LeaseFunc, cfg.Registerer, cfg.Clock = lim, nil, nil, p.cfg.Clock
	cfg.Logger = p.cfg.Logger.With("job", cfg.Job)
	c, err := catchup.New(p.cfg.Source(account, lim.OnRateLimited), p.cfg.Processor, postgres.NewEventCursors(p.cfg.Pool), cfg)
	if err != nil {
		return nil, nil, err
	}
	p.catchers[account], p.evLimits[account] = c, lim
	return c, lim, nil
}

// DiscoverArgs are the periodic discovery of accounts.
type DiscoverArgs struct{}

// Kind implements river.JobArgs.
func (DiscoverArgs) Kind() string { return DiscoverKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (DiscoverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByState: active}}
}

type discoverWorker struct {
	river.WorkerDefaults[DiscoverArgs]
	p *Platform
}

// Work starts the sweep chain (and events chain) of every account that has
// none.
func (w *discoverWorker) Work(ctx context.Context, _ *river.Job[DiscoverArgs]) error {
	n, err := w.p.Discover(ctx, river.ClientFromContext[pgx.Tx](ctx))
	if err != nil {
		return err
	}
	if n > 0 {
		w.p.cfg.Logger.Info("account sweeps started", "count", n)
	}
	return nil
}

// Discover starts, through client, the chain of every account payments has
// rows of that has no batch running or waiting (and its events chain), and
// returns how many chains it started.
func (p *Platform) Discover(ctx context.Context, client *river.Client[pgx.Tx]) (int, error) {
	accounts, err := postgres.ListAccounts(ctx, p.cfg.Pool, p.cfg.Accounts)
	if err != nil {
		return 0, err
	}
	active, err := postgres.ActiveJobs(ctx, p.cfg.Pool, []string{SweepKind, EventsKind})
	if err != nil {
		return 0, err
	}
	p.metrics.accounts.Store(int64(len(accounts)))
	var params []river.InsertManyParams
	for _, acct := range accounts {
		if job := payrecon.AccountJob(p.cfg.Job, acct); !active[SweepKind+" "+job] {
			params = append(params, river.InsertManyParams{Args: SweepArgs{Job: job, Account: acct}})
		}
		if acct == "" || p.cfg.Events.Interval <= 0 {
			continue
		}
		if job := EventsJob(catchup.JobDefault, acct); !active[EventsKind+" "+job] {
			params = append(params, river.InsertManyParams{Args: EventsArgs{Job: job, Account: acct}})
		}
	}
	if len(params) == 0 {
		return 0, nil
	}
	res, err := client.InsertMany(ctx, params)
	if err != nil {
		return 0, fmt.Errorf("start %d account chains: %w", len(params), err)
	}
	started := 0
	for _, r := range res {
		if !r.UniqueSkippedAsDuplicate {
			started++
		}
	}
	return started, nil
}
