package settlement

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
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/riverjobs"
)

// River job kinds and queue of the payouts check in `payrecon run`.
const (
	// RoundKind is the periodic round (`run --payouts-interval`).
	RoundKind = "payrecon_payouts"
	// ReadKind reads one payout a payout.* event named.
	ReadKind = "payrecon_payout_read"
	// Queue is the queue both run on, one job at a time per process.
	Queue = "payouts"
)

// RoundTimeout bounds a round and a payout's read: River rescues a job
// only after it, so a replica that died mid-round is replaced within it.
const RoundTimeout = 30 * time.Minute

// RoundArgs are the (empty) arguments of the periodic round.
type RoundArgs struct{}

// Kind implements river.JobArgs.
func (RoundArgs) Kind() string { return RoundKind }

// InsertOpts implements river.JobArgsWithInsertOpts: at most one round
// waiting or running at a time, over every replica.
func (RoundArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       Queue,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateRetryable, rivertype.JobStateScheduled,
		}},
	}
}

// ReadArgs name the payout an event asked to read. Not unique: each event
// reads once (its id is deduplicated before), so a change that arrives
// while an earlier read runs is read again.
type ReadArgs struct {
	Account  string `json:"account,omitempty"`
	PayoutID string `json:"payout_id"`
	EventID  string `json:"event_id,omitempty"`
}

// Kind implements river.JobArgs.
func (ReadArgs) Kind() string { return ReadKind }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (ReadArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: Queue} }

// Jobs are the payouts check's River jobs for `payrecon run`: the round
// River's leader schedules every interval (and once at start), and the
// read of one payout an event named, both on Queue, one at a time per
// process; River retries them with backoff while Stripe is unavailable.
// Give them to the relay (relay.Config.Jobs).
func (r *Reconciler) Jobs(interval time.Duration) riverjobs.Set {
	j := riverjobs.Set{
		Register: func(w *river.Workers) error {
			if err := river.AddWorkerSafely(w, &roundWorker{rec: r}); err != nil {
				return fmt.Errorf("register the payouts round: %w", err)
			}
			if err := river.AddWorkerSafely(w, &readWorker{rec: r}); err != nil {
				return fmt.Errorf("register the payout read: %w", err)
			}
			return nil
		},
		Queues: map[string]int{Queue: 1},
	}
	if interval > 0 {
		j.Periodic = []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(interval),
			func() (river.JobArgs, *river.InsertOpts) { return RoundArgs{}, nil },
			&river.PeriodicJobOpts{ID: RoundKind, RunOnStart: true})}
	}
	return j
}

// EnqueueRead returns the postgres.PayoutFunc that inserts the read of a
// payout with client, inside a payout event's transaction, so it commits or
// rolls back with the event's record.
func EnqueueRead(client *river.Client[pgx.Tx]) postgres.PayoutFunc {
	return func(ctx context.Context, tx pgx.Tx, account, payoutID, eventID string) error {
		if _, err := client.InsertTx(ctx, tx, ReadArgs{Account: account, PayoutID: payoutID, EventID: eventID}, nil); err != nil {
			return fmt.Errorf("queue the read of payout %s: %w", payoutID, err)
		}
		return nil
	}
}

type roundWorker struct {
	river.WorkerDefaults[RoundArgs]
	rec *Reconciler
}

// Timeout gives a round RoundTimeout.
func (w *roundWorker) Timeout(*river.Job[RoundArgs]) time.Duration { return RoundTimeout }

// Work runs one round; a key without the permissions cancels it (no retry
// helps; the log says which one, and the next periodic round tries again).
func (w *roundWorker) Work(ctx context.Context, job *river.Job[RoundArgs]) error {
	rep, err := w.rec.RunOnce(ctx)
	if err == nil {
		w.rec.cfg.Logger.Info("payouts round", "account", rep.Account, "summary", rep.Describe(),
			"duration", rep.Duration.Round(time.Millisecond))
	}
	return w.rec.outcome(job.ID, job.Attempt, "payouts round", err)
}

type readWorker struct {
	river.WorkerDefaults[ReadArgs]
	rec *Reconciler
}

// Timeout gives a payout's read the round's: a payout may hold thousands
// of lines.
func (w *readWorker) Timeout(*river.Job[ReadArgs]) time.Duration { return RoundTimeout }

// Work reads the payout; one Stripe does not have is cancelled.
func (w *readWorker) Work(ctx context.Context, job *river.Job[ReadArgs]) error {
	a := job.Args
	rep, err := w.rec.ReadPayout(ctx, a.Account, a.PayoutID)
	switch {
	case err == nil:
		w.rec.cfg.Logger.Info("payout read", "payout_id", a.PayoutID, "event_id", a.EventID, "summary", rep.Describe())
	case errors.Is(err, payrecon.ErrNotFound):
		w.rec.cfg.Logger.Warn("the payout an event named is not in Stripe; not read", "payout_id", a.PayoutID,
			"event_id", a.EventID, "error", err)
		return river.JobCancel(err)
	}
	return w.rec.outcome(job.ID, job.Attempt, "read of payout "+a.PayoutID, err)
}

// outcome maps a payouts job's error onto River's: nil, a cancel for a
// configuration error, or the error (River retries it).
func (r *Reconciler) outcome(jobID int64, attempt int, what string, err error) error {
	log := r.cfg.Logger
	switch {
	case err == nil:
		return nil
	case errors.Is(err, payrecon.ErrConfig):
		log.Error(what+" refused by Stripe; fix the key and the next round reads again", slog.Int64("job_id", jobID),
			slog.String("error", err.Error()))
		return river.JobCancel(err)
	}
	log.Warn(what+" failed; River retries it", slog.Int64("job_id", jobID), slog.Int("attempt", attempt),
		slog.String("error", err.Error()))
	return err
}
