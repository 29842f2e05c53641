package relay

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/riverjobs"
)

// Defaults of Config.
const (
	WorkersDefault              = 20
	MaxAttemptsDefault          = 8
	FetchCooldownDefault        = 2 * time.Millisecond
	FetchPollIntervalDefault    = time.Second
	JobTimeoutDefault           = 10 * time.Second
	RescueStuckJobsAfterDefault = 30 * time.Second
	DrainPollIntervalDefault    = 50 * time.Millisecond
	DrainRetryHorizonDefault    = 20 * time.Second
)

// Config configures a Relay. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// Workers is how many commands this process applies at once (River's
	// MaxWorkers for the queue). Each needs a pool connection: the pool
	// should allow Workers + 3 (River's listener, fetcher and completer).
	// Default WorkersDefault.
	Workers int
	// MaxAttempts bounds the attempts of one command; after the last failed
	// attempt River discards the job (the dead letter). It is stored on the
	// job when it is inserted, so it is the inserting process's setting that
	// counts. Default MaxAttemptsDefault.
	MaxAttempts int
	// Logger receives the relay's and River's logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the relay's metrics; nil registers them nowhere.
	Registerer prometheus.Registerer
	// Clock times drains (DrainReport.Duration). River schedules retries on
	// its own clock, and the writer stamps its changes with its own.
	// Default payrecon.SystemClock.
	Clock payrecon.Clock
	// FetchCooldown is the least time between two fetches of jobs, and
	// between two insert notifications sent by this process. A fetch takes
	// up to Workers jobs, so it bounds throughput at Workers/FetchCooldown
	// per second; it also delays a command that arrives right after a
	// fetch. Default FetchCooldownDefault.
	FetchCooldown time.Duration
	// FetchPollInterval is how often the relay looks for jobs when no insert
	// notification arrives (a fallback: notifications wake it at once).
	// Default FetchPollIntervalDefault.
	FetchPollInterval time.Duration
	// InsertOnly builds a relay that only enqueues commands and answers
	// operator queries (for `scan --once` and `findings`): Start and Drain
	// return ErrInsertOnly.
	InsertOnly bool
	// RetryPolicy schedules the retries of failed attempts; nil means River's
	// default (attempt⁴ seconds, with jitter).
	RetryPolicy river.ClientRetryPolicy
	// JobTimeout cancels an attempt that runs longer. Default
	// JobTimeoutDefault.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before River
	// considers its worker dead and schedules it again. An attempt is one
	// short transaction and a rescued job that was still running cannot
	// apply twice, so this can be short. It must exceed JobTimeout. Default
	// RescueStuckJobsAfterDefault.
	RescueStuckJobsAfter time.Duration
	// DeadLetterRetention is how long discarded and cancelled jobs are kept
	// before River's cleaner deletes them; zero keeps them until an operator
	// retries or deletes them. (It is River's retention for those states,
	// for every kind of job in the database.)
	DeadLetterRetention time.Duration
	// AdoptInterval is how often the running relay gives a delivery job to
	// outbox commands that have none (written by another producer); zero
	// means AdoptIntervalDefault, Never never.
	AdoptInterval time.Duration
	// RiverJobRetention is how long completed jobs are kept before River's
	// cleaner deletes them (River's CompletedJobRetentionPeriod, for every
	// kind of job in the database, on River's leader; PruneOnce deletes
	// payrecon's own for cron). Zero means RiverJobRetentionDefault,
	// Forever for ever. Dead letters follow DeadLetterRetention.
	RiverJobRetention time.Duration
	// PruneTargets are what the periodic prune deletes, and after how long
	// (postgres.PruneTarget); nil means postgres.PruneTargets(), the
	// defaults. Give every process that runs the relay the same ones:
	// whichever works the job prunes with its own.
	PruneTargets []postgres.PruneTarget
	// PruneInterval is how often River's leader schedules the prune job;
	// zero means PruneIntervalDefault, Never never.
	PruneInterval time.Duration
	// PruneBatch bounds the rows one prune batch examines (at most 10,000,
	// River's limit on one deletion); zero means postgres.PruneBatchDefault.
	PruneBatch int
	// Jobs are other River jobs this process works on the same client (a
	// platform's account sweeps): registered with the workers, their queues
	// added unless InsertOnly, their periodic jobs scheduled by River's
	// leader.
	Jobs riverjobs.Set
	// Notify, with a URL, POSTs every transition the writer makes to the
	// application: New registers the writer's transition hook that inserts
	// the notification's job in the transition's transaction and, unless
	// InsertOnly, workers on NotifyQueue that deliver it.
	Notify NotifyConfig
	// DrainPollInterval is how often Drain checks whether anything is left.
	// Default DrainPollIntervalDefault.
	DrainPollInterval time.Duration
	// DrainRetryHorizon is how far ahead Drain counts a scheduled retry as
	// due and waits for it: River's first retries (about 1 s and 16 s after
	// a failure, with its default policy) and jobs rescued from a dead
	// worker (rescheduled about 1 s ahead) are applied by the same drain;
	// retries scheduled later are left and counted in
	// DrainReport.RetryLater. Negative means no horizon: only retries due
	// now count. Default DrainRetryHorizonDefault.
	DrainRetryHorizon time.Duration
}

// Never, as Config.PruneInterval or AdoptInterval, turns that periodic job
// off; Forever, as Config.RiverJobRetention, keeps completed jobs for ever.
// (A zero field means the default; any negative value means the same as
// these.)
const (
	Never   time.Duration = -1
	Forever time.Duration = -1
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.Workers == 0 {
		c.Workers = WorkersDefault
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = MaxAttemptsDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.FetchCooldown == 0 {
		c.FetchCooldown = FetchCooldownDefault
	}
	if c.FetchPollInterval == 0 {
		c.FetchPollInterval = max(FetchPollIntervalDefault, c.FetchCooldown)
	}
	if c.JobTimeout == 0 {
		c.JobTimeout = JobTimeoutDefault
	}
	if c.RescueStuckJobsAfter == 0 {
		c.RescueStuckJobsAfter = max(RescueStuckJobsAfterDefault, 3*c.JobTimeout)
	}
	if c.AdoptInterval == 0 {
		c.AdoptInterval = AdoptIntervalDefault
	}
	if c.RiverJobRetention == 0 {
		c.RiverJobRetention = RiverJobRetentionDefault
	}
	if c.PruneTargets == nil {
		c.PruneTargets = postgres.PruneTargets()
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = PruneIntervalDefault
	}
	if c.PruneBatch == 0 {
		c.PruneBatch = postgres.PruneBatchDefault
	}
	if c.DrainPollInterval == 0 {
		c.DrainPollInterval = DrainPollIntervalDefault
	}
	if c.Notify.enabled() {
		c.Notify = c.Notify.withDefaults()
	}
	switch {
	case c.DrainRetryHorizon == 0:
		c.DrainRetryHorizon = DrainRetryHorizonDefault
	case c.DrainRetryHorizon < 0:
		c.DrainRetryHorizon = 0
	}
	return c
}

// Validate reports the first setting that cannot work, after defaults are
// applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	if c.Workers < 1 || c.Workers > river.QueueNumWorkersMax {
		errs = append(errs, fmt.Errorf("workers must be between 1 and %d, not %d", river.QueueNumWorkersMax, c.Workers))
	}
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("max attempts must be at least 1, not %d", c.MaxAttempts))
	}
	if c.FetchCooldown < river.FetchCooldownMin {
		errs = append(errs, fmt.Errorf("fetch cooldown must be at least %s, not %s", river.FetchCooldownMin, c.FetchCooldown))
	}
	if c.FetchPollInterval < c.FetchCooldown {
		errs = append(errs, fmt.Errorf("fetch poll interval %s is shorter than the fetch cooldown %s", c.FetchPollInterval, c.FetchCooldown))
	}
	if c.JobTimeout < 0 {
		errs = append(errs, fmt.Errorf("job timeout must be positive, not %s", c.JobTimeout))
	}
	if c.RescueStuckJobsAfter <= c.JobTimeout {
		errs = append(errs, fmt.Errorf("rescue stuck jobs after (%s) must exceed the job timeout (%s)", c.RescueStuckJobsAfter, c.JobTimeout))
	}
	if c.DeadLetterRetention < 0 {
		errs = append(errs, fmt.Errorf("dead letter retention must not be negative, not %s", c.DeadLetterRetention))
	}
	if err := postgres.ValidatePruneTargets(c.PruneTargets); err != nil {
		errs = append(errs, err)
	}
	if c.PruneBatch < 1 || c.PruneBatch > 10000 {
		errs = append(errs, fmt.Errorf("prune batch must be between 1 and 10000, not %d", c.PruneBatch))
	}
	if c.DrainPollInterval < 0 {
		errs = append(errs, fmt.Errorf("drain poll interval must not be negative, not %s", c.DrainPollInterval))
	}
	if err := c.Notify.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("relay config: %w", err)
	}
	return nil
}
