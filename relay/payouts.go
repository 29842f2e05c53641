package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
)

// River job kinds and queue of the payouts check.
const (
	// PayoutsKind is the periodic payouts round (`run --payouts-interval`).
	PayoutsKind = "payrecon_payouts"
	// PayoutReadKind reads one payout a payout.* event named.
	PayoutReadKind = "payrecon_payout_read"
	// PayoutsQueue is the queue both run on.
	PayoutsQueue = "payouts"
)

// PayoutsRoundTimeoutDefault bounds a payouts round: River rescues a round
// only after it, so a replica that died mid-round is replaced within it.
const PayoutsRoundTimeoutDefault = 30 * time.Minute

// PayoutsConfig, with RoundFunc and ReadFunc set, gives the relay the
// payouts check's jobs: a round River's leader schedules every Interval
// (and once at start; at most one waiting or running over every replica),
// and the read of one payout, inserted in a payout event's transaction
// (EnqueuePayoutRead). Both run on PayoutsQueue, Workers at a time per
// process; River retries them with backoff when Stripe is unavailable.
type PayoutsConfig struct {
	// Interval is how often a round is scheduled; 0: never (reads of
	// payouts named by events still run).
	Interval time.Duration
	// RoundFunc runs one round (settlement.Reconciler.RunOnce).
	RoundFunc func(ctx context.Context) error
	// ReadFunc reads one payout (settlement.Reconciler.ReadPayout).
	ReadFunc func(ctx context.Context, account, payoutID string) error
	// Workers is how many of the jobs one process runs at once (default 1).
	Workers int
	// Timeout bounds a round (default PayoutsRoundTimeoutDefault).
	Timeout time.Duration
}

func (c PayoutsConfig) enabled() bool { return c.RoundFunc != nil && c.ReadFunc != nil }

func (c PayoutsConfig) withDefaults() PayoutsConfig {
	if c.Workers <= 0 {
		c.Workers = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = PayoutsRoundTimeoutDefault
	}
	return c
}

// PayoutsArgs are the (empty) arguments of the periodic round.
type PayoutsArgs struct{}

// Kind implements river.JobArgs.
func (PayoutsArgs) Kind() string { return PayoutsKind }

// InsertOpts implements river.JobArgsWithInsertOpts: at most one round
// waiting or running at a time.
func (PayoutsArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       PayoutsQueue,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

// PayoutReadArgs name the payout an event asked to read. Not unique: each
// event reads once (its id is deduplicated before), so a change that
// arrives while an earlier read runs is read again.
type PayoutReadArgs struct {
	Account  string `json:"account,omitempty"`
	PayoutID string `json:"payout_id"`
	EventID  string `json:"event_id,omitempty"`
}

// Kind implements river.JobArgs.
func (PayoutReadArgs) Kind() string { return PayoutReadKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (PayoutReadArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: PayoutsQueue}
}

// EnqueuePayoutRead inserts the read of a payout inside tx (a payout
// event's transaction), so it commits or rolls back with the event's
// record; it is a postgres.PayoutFunc. An insert-only relay can queue them
// too: a running `payrecon run` with the payouts check on works them.
func (r *Relay) EnqueuePayoutRead(ctx context.Context, tx pgx.Tx, account, payoutID, eventID string) error {
	if _, err := r.client.InsertTx(ctx, tx, PayoutReadArgs{Account: account, PayoutID: payoutID, EventID: eventID}, nil); err != nil {
		return fmt.Errorf("queue the read of payout %s: %w", payoutID, err)
	}
	return nil
}

type payoutsWorker struct {
	river.WorkerDefaults[PayoutsArgs]
	relay *Relay
}

// Timeout gives a round PayoutsConfig.Timeout.
func (w *payoutsWorker) Timeout(*river.Job[PayoutsArgs]) time.Duration {
	return w.relay.cfg.Payouts.Timeout
}

// Work runs one round; a key without the permissions cancels it (no retry
// helps; the log says which one, and the next periodic round tries again).
func (w *payoutsWorker) Work(ctx context.Context, job *river.Job[PayoutsArgs]) error {
	err := w.relay.cfg.Payouts.RoundFunc(ctx)
	return w.relay.payoutOutcome(job.ID, job.Attempt, "payouts round", err)
}

type payoutReadWorker struct {
	river.WorkerDefaults[PayoutReadArgs]
	relay *Relay
}

// Timeout gives a read of one payout the round's timeout: a payout may
// hold thousands of lines.
func (w *payoutReadWorker) Timeout(*river.Job[PayoutReadArgs]) time.Duration {
	return w.relay.cfg.Payouts.Timeout
}

// Work reads the payout.
func (w *payoutReadWorker) Work(ctx context.Context, job *river.Job[PayoutReadArgs]) error {
	err := w.relay.cfg.Payouts.ReadFunc(ctx, job.Args.Account, job.Args.PayoutID)
	if errors.Is(err, payrecon.ErrNotFound) {
		w.relay.log.Warn("relay: the payout an event named is not in Stripe; not read", slog.String("payout_id", job.Args.PayoutID),
			slog.String("event_id", job.Args.EventID), slog.String("error", err.Error()))
		return river.JobCancel(err)
	}
	return w.relay.payoutOutcome(job.ID, job.Attempt, "read of payout "+job.Args.PayoutID, err)
}

// payoutOutcome maps a payouts job's error onto River's: nil, a cancel
// for a configuration error, or the error (River retries it).
func (r *Relay) payoutOutcome(jobID int64, attempt int, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, payrecon.ErrConfig):
		r.log.Error("relay: "+what+" refused by Stripe; fix the key and the next round reads again", slog.Int64("job_id", jobID),
			slog.String("error", err.Error()))
		return river.JobCancel(err)
	}
	r.log.Warn("relay: "+what+" failed; River retries it", slog.Int64("job_id", jobID), slog.Int("attempt", attempt),
		slog.String("error", err.Error()))
	return err
}

// payoutsJob is the periodic round River's leader inserts every interval
// (and once when it starts).
func payoutsJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return PayoutsArgs{}, nil },
		&river.PeriodicJobOpts{ID: PayoutsKind, RunOnStart: true})
}
