package relay

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/payrecon/payrecon/internal/sqlq"
	"github.com/payrecon/payrecon/postgres"
)

// Errors of the relay's life cycle.
var (
	// ErrInsertOnly: Start or Drain on a relay built with Config.InsertOnly.
	ErrInsertOnly = errors.New("relay is insert-only")
	// ErrRunning: Start or Drain while the relay is already running.
	ErrRunning = errors.New("relay is already running")
)

// Relay delivers repair commands from the outbox to the canonical writer
// through one River client. Its methods are safe for concurrent use; Start
// and Drain are exclusive.
type Relay struct {
	pool   *pgxpool.Pool
	writer *postgres.Writer
	cfg    Config
	log    *slog.Logger
	client *river.Client[pgx.Tx]
	pruner *postgres.Pruner
	stats  counters
	metric *metrics

	mu      sync.Mutex // guards running
	running bool
}

// counters count what the workers did since the relay was built.
type counters struct {
	applied      atomic.Int64
	alreadyDone  atomic.Int64
	unapplied    atomic.Int64
	failed       atomic.Int64
	deadLettered atomic.Int64
}

// New builds a relay on pool: one River client (riverpgxv5) with the repair
// worker registered, and, unless cfg.InsertOnly, the repairs queue with
// cfg.Workers workers. Nothing runs until Start or Drain.
func New(pool *pgxpool.Pool, writer *postgres.Writer, cfg Config) (*Relay, error) {
	if pool == nil {
		return nil, errors.New("new relay: nil pool")
	}
	if writer == nil {
		return nil, errors.New("new relay: nil writer")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new relay: %w", err)
	}
	cfg = cfg.withDefaults()
	r := &Relay{pool: pool, writer: writer, cfg: cfg, log: cfg.Logger, metric: newMetrics(cfg.Registerer, cfg.PruneTargets)}
	pruner, err := postgres.NewPruner(pool, postgres.PrunerConfig{
		Targets: cfg.PruneTargets, BatchSize: cfg.PruneBatch, Clock: cfg.Clock, Logger: cfg.Logger,
		DeletedFunc: func(target string, n int64) { r.metric.pruned.WithLabelValues(target).Add(float64(n)) },
	})
	if err != nil {
		return nil, fmt.Errorf("new relay: %w", err)
	}
	r.pruner = pruner

	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &repairWorker{relay: r}); err != nil {
		return nil, fmt.Errorf("new relay: register worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &adoptWorker{relay: r}); err != nil {
		return nil, fmt.Errorf("new relay: register adopt worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &pruneWorker{relay: r}); err != nil {
		return nil, fmt.Errorf("new relay: register prune worker: %w", err)
	}
	if err := river.AddWorkerSafely(workers, &notifyWorker{relay: r}); err != nil {
		return nil, fmt.Errorf("new relay: register notify worker: %w", err)
	}
	if cfg.Jobs.Register != nil {
		if err := cfg.Jobs.Register(workers); err != nil {
			return nil, fmt.Errorf("new relay: register workers: %w", err)
		}
	}
	retention := cfg.DeadLetterRetention
	if retention == 0 {
		retention = -1 // River: never delete
	}
	completed := cfg.RiverJobRetention
	if completed < 0 {
		completed = -1 // River: never delete
	}
	rc := &river.Config{
		Logger:                      cfg.Logger,
		Workers:                     workers,
		MaxAttempts:                 cfg.MaxAttempts,
		FetchCooldown:               cfg.FetchCooldown,
		FetchPollInterval:           cfg.FetchPollInterval,
		JobTimeout:                  cfg.JobTimeout,
		RescueStuckJobsAfter:        cfg.RescueStuckJobsAfter,
		RetryPolicy:                 cfg.RetryPolicy,
		CancelledJobRetentionPeriod: retention,
		DiscardedJobRetentionPeriod: retention,
		CompletedJobRetentionPeriod: completed,
	}
	if !cfg.InsertOnly {
		rc.Queues = map[string]river.QueueConfig{Queue: {MaxWorkers: cfg.Workers}}
		if cfg.Notify.enabled() {
			rc.Queues[NotifyQueue] = river.QueueConfig{MaxWorkers: cfg.Notify.Workers}
		}
		if cfg.AdoptInterval > 0 {
			rc.PeriodicJobs = append(rc.PeriodicJobs, adoptJob(cfg.AdoptInterval))
		}
		if cfg.PruneInterval > 0 {
			rc.PeriodicJobs = append(rc.PeriodicJobs, pruneJob(cfg.PruneInterval))
		}
		for q, n := range cfg.Jobs.Queues {
			rc.Queues[q] = river.QueueConfig{MaxWorkers: n}
		}
		rc.PeriodicJobs = append(rc.PeriodicJobs, cfg.Jobs.Periodic...)
		if conns := int(pool.Config().MaxConns); conns < cfg.Workers+3 {
			r.log.Warn("relay: the pool has fewer connections than workers need; workers will wait for connections",
				slog.Int("pool_max_conns", conns), slog.Int("workers", cfg.Workers), slog.Int("want_at_least", cfg.Workers+3))
		}
	}
	client, err := river.NewClient(riverpgxv5.New(pool), rc)
	if err != nil {
		return nil, fmt.Errorf("new relay: river client: %w", err)
	}
	r.client = client
	// Every relay's writer inserts the notification of each transition it
	// makes when notifications are configured, here or (recorded in the
	// database) by another process: a transition made by `events --once`
	// or `relay --drain` without --notify-url is still delivered by the
	// processes that have it.
	writer.OnTransition(r.enqueueNotification)
	return r, nil
}

// Client returns the relay's River client, to insert other jobs with.
func (r *Relay) Client() *river.Client[pgx.Tx] { return r.client }

// RecordNotifications records in the database that notifications are
// configured (this relay has a notify URL), so that every process's
// transitions insert their notification jobs from now on. Start calls it;
// an insert-only relay with a notify URL (events --once) calls it itself.
// A relay without a URL records nothing.
func (r *Relay) RecordNotifications(ctx context.Context) error {
	if !r.cfg.Notify.enabled() {
		return nil
	}
	if _, err := r.pool.Exec(ctx, queries.Get("notifications_record"), pgx.StrictNamedArgs{"now": r.cfg.Clock.Now()}); err != nil {
		return fmt.Errorf("record that notifications are configured: %w", err)
	}
	return nil
}

// Enqueue inserts one delivery job per outbox id inside tx (River's
// InsertManyTx), so the jobs commit or roll back with the caller's outbox
// rows, and River's insert notification wakes an idle relay when tx
// commits. An id that already has a job is skipped: jobs are unique by
// outbox id.
func (r *Relay) Enqueue(ctx context.Context, tx pgx.Tx, outboxIDs []int64) error {
	_, err := r.insert(ctx, tx, outboxIDs, false)
	return err
}

// insert inserts the delivery jobs of outboxIDs in tx, pending (held for
// review: no worker fetches them until Approve) or available, and returns
// how many were new.
func (r *Relay) insert(ctx context.Context, tx pgx.Tx, outboxIDs []int64, pending bool) (int, error) {
	if len(outboxIDs) == 0 {
		return 0, nil
	}
	params := make([]river.InsertManyParams, len(outboxIDs))
	for i, id := range outboxIDs {
		params[i] = river.InsertManyParams{
			Args:       RepairArgs{OutboxID: id},
			InsertOpts: &river.InsertOpts{MaxAttempts: r.cfg.MaxAttempts, Pending: pending},
		}
	}
	res, err := r.client.InsertManyTx(ctx, tx, params)
	if err != nil {
		return 0, fmt.Errorf("enqueue %d repair commands (outbox %d…): %w", len(outboxIDs), outboxIDs[0], err)
	}
	n := 0
	for _, x := range res {
		if !x.UniqueSkippedAsDuplicate {
			n++
		}
	}
	return n, nil
}

// EnqueueFunc returns Enqueue as a postgres.EnqueueFunc, to install as
// postgres.Store.EnqueueFunc: the sweep then enqueues each batch's repair
// commands in the batch's own transaction.
func (r *Relay) EnqueueFunc() postgres.EnqueueFunc { return r.Enqueue }

// EnqueueUnprocessed enqueues every unprocessed outbox command that has no
// delivery job: commands written by another producer, or before the relay
// was wired in. It returns how many jobs it inserted.
func (r *Relay) EnqueueUnprocessed(ctx context.Context) (int, error) {
	const batch = 1000
	var after int64
	total := 0
	for {
		rows, err := r.pool.Query(ctx, queries.Get("unenqueued_outbox"), pgx.StrictNamedArgs{"after": after, "kind": Kind, "limit": batch})
		if err != nil {
			return total, fmt.Errorf("find unenqueued outbox commands after %d: %w", after, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return total, fmt.Errorf("find unenqueued outbox commands after %d: %w", after, err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		var n int
		if err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) (err error) {
			n, err = r.insert(ctx, tx, ids, false)
			return err
		}); err != nil {
			return total, err
		}
		total += n
		after = ids[len(ids)-1]
	}
}

// Start starts the workers for the long-running service: they apply commands
// as they arrive until Stop (or until ctx is cancelled, which stops them the
// same way).
func (r *Relay) Start(ctx context.Context) error {
	if r.cfg.InsertOnly {
		return fmt.Errorf("start relay: %w", ErrInsertOnly)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		return fmt.Errorf("start relay: %w", ErrRunning)
	}
	if err := r.RecordNotifications(ctx); err != nil {
		return fmt.Errorf("start relay: %w", err)
	}
	if err := r.client.Start(ctx); err != nil {
		return fmt.Errorf("start relay: %w", err)
	}
	r.running = true
	r.log.Info("relay: started", slog.Int("workers", r.cfg.Workers), slog.Int("max_attempts", r.cfg.MaxAttempts),
		slog.Duration("fetch_cooldown", r.cfg.FetchCooldown), slog.Duration("fetch_poll_interval", r.cfg.FetchPollInterval))
	return nil
}

// Stop stops fetching, waits for the commands in flight to finish, and
// returns; if ctx ends first it returns ctx's error and Stop may be called
// again. Stopping a relay that is not running does nothing.
func (r *Relay) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return nil
	}
	if err := r.client.Stop(ctx); err != nil {
		return fmt.Errorf("stop relay: %w", err)
	}
	r.running = false
	r.log.Info("relay: stopped")
	return nil
}

//go:embed queries/*.sql
var queryFiles embed.FS

// queries are the package's statements, by file name.
var queries = sqlq.New("relay", queryFiles, "queries")
