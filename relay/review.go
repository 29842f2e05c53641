package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
)

// Review mode (payrecon.RepairReview): a repair command is recorded in the
// outbox as always, and its delivery job is inserted in River's pending
// state, which no worker fetches (River's own mechanism for work that waits
// for an external update; a payrecon of an earlier version, running beside
// this one during an upgrade, cannot apply it either). Approve makes the job
// available, in the transaction that records who approved it; a held
// command whose finding closed first is dropped instead, never applied.

// OutcomeDroppedPrefix begins the outbox outcome of a held command that was
// dropped because its finding closed before an approval.
const OutcomeDroppedPrefix = payrecon.RepairDroppedPrefix

// settleBatch bounds the commands one settling transaction locks.
const settleBatch = 500

// HoldFunc returns Hold as a postgres.EnqueueFunc, to install as
// postgres.Store.HoldFunc (and postgres.Events.HoldFunc) under repair mode
// review.
func (r *Relay) HoldFunc() postgres.EnqueueFunc { return r.Hold }

// Hold records the outbox commands as held for review inside tx (held_at)
// and inserts their delivery jobs pending, so that they commit or roll back
// with the caller's outbox rows and wait there for Approve.
func (r *Relay) Hold(ctx context.Context, tx pgx.Tx, outboxIDs []int64) error {
	if len(outboxIDs) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, queries.Get("hold_outbox"), pgx.StrictNamedArgs{"ids": outboxIDs, "now": r.cfg.Clock.Now()}); err != nil {
		return fmt.Errorf("hold %d repair commands (outbox %d…): %w", len(outboxIDs), outboxIDs[0], err)
	}
	_, err := r.insert(ctx, tx, outboxIDs, true)
	return err
}

// Settled is one held command that an approval or a drop settled.
type Settled struct {
	OutboxID  int64 `json:"outbox_id"`
	FindingID int64 `json:"finding_id,omitempty"`
	// JobID is its delivery job (0: it had none, and an approval inserted
	// one, whose id is not read back).
	JobID int64 `json:"job_id,omitempty"`
	// Dropped, when set, is why the command was dropped rather than
	// approved: its finding had closed. It is never applied.
	Dropped string `json:"dropped,omitempty"`
}

// ApproveReport says what one Approve did.
type ApproveReport struct {
	// Approved are the commands now on their way to a worker.
	Approved []Settled `json:"approved"`
	// Dropped are the held commands whose finding closed before the
	// approval: marked processed, never applied.
	Dropped []Settled `json:"dropped"`
	// NotHeld are the ids asked for that were not held: already approved,
	// applied or dropped, never held, or no such command.
	NotHeld []int64 `json:"not_held"`
}

// Approve lets held repair commands through, recording operator and the
// time on each: their jobs become available in the same transaction, and a
// running relay applies each exactly once (the outbox row is the lock: a
// second approver finds them approved and does nothing). A held command
// whose finding closed meanwhile is dropped instead. With all, every held
// command is settled and ids are ignored.
func (r *Relay) Approve(ctx context.Context, ids []int64, all bool, operator string) (ApproveReport, error) {
	rep := ApproveReport{Approved: []Settled{}, Dropped: []Settled{}, NotHeld: []int64{}}
	if operator == "" {
		return rep, errors.New("approve repairs: the operator's name is required")
	}
	if !all && len(ids) == 0 {
		return rep, nil
	}
	seen := map[int64]bool{}
	// With all, settle until nothing is held; else the ids, a batch at a
	// time (each transaction locks at most settleBatch rows).
	for i := 0; all || i < len(ids); i += settleBatch {
		var chunk []int64
		if !all {
			chunk = ids[i:min(i+settleBatch, len(ids))]
		}
		settled, err := r.settle(ctx, chunk, all, true, operator)
		for _, s := range settled {
			seen[s.OutboxID] = true
			if s.Dropped != "" {
				rep.Dropped = append(rep.Dropped, s)
			} else {
				rep.Approved = append(rep.Approved, s)
			}
		}
		if err != nil {
			return rep, err
		}
		if all && len(settled) == 0 {
			break
		}
	}
	for _, id := range ids {
		if !all && !seen[id] {
			rep.NotHeld = append(rep.NotHeld, id)
		}
	}
	if len(rep.Approved) > 0 || len(rep.Dropped) > 0 {
		r.log.Info("relay: held repairs approved", slog.String("operator", operator),
			slog.Int("approved", len(rep.Approved)), slog.Int("dropped", len(rep.Dropped)))
	}
	return rep, nil
}

// DropHealed drops every held command whose finding closed (healed,
// superseded, resolved by hand) before an approval: marked processed with
// its reason, its pending job deleted. The periodic adopt job and relay
// --drain run it, so such commands do not linger as held. It returns what
// it dropped.
func (r *Relay) DropHealed(ctx context.Context) ([]Settled, error) {
	var out []Settled
	for {
		settled, err := r.settle(ctx, nil, true, false, "")
		out = append(out, settled...)
		if err != nil || len(settled) == 0 {
			return out, err
		}
	}
}

// settle runs one settling transaction (queries/settle_held.sql) over at
// most settleBatch held commands and acts on their jobs in it: an approved
// command's job is made available (River's JobRetryTx: pending becomes
// available) or inserted when it has none; a dropped command's job is
// deleted.
func (r *Relay) settle(ctx context.Context, ids []int64, all, approve bool, operator string) ([]Settled, error) {
	if ids == nil {
		ids = []int64{}
	}
	var out []Settled
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, queries.Get("settle_held"), pgx.StrictNamedArgs{
			"ids": ids, "all": all, "approve": approve, "operator": operator, "now": r.cfg.Clock.Now(),
			"limit": settleBatch, "kind": Kind, "dropped": OutcomeDroppedPrefix,
		})
		if err != nil {
			return fmt.Errorf("settle held repairs: %w", err)
		}
		var (
			s                 Settled
			finding, job      *int64
			approved          bool
			dropped           *string
			toInsert, retries []int64
			deletes           []int64
		)
		if _, err := pgx.ForEachRow(rows, []any{&s.OutboxID, &finding, &approved, &dropped, &job}, func() error {
			x := Settled{OutboxID: s.OutboxID}
			if finding != nil {
				x.FindingID = *finding
			}
			if job != nil {
				x.JobID = *job
			}
			if dropped != nil {
				x.Dropped = *dropped
			}
			switch {
			case x.Dropped != "" && x.JobID != 0:
				deletes = append(deletes, x.JobID)
			case x.Dropped == "" && approved && x.JobID != 0:
				retries = append(retries, x.JobID)
			case x.Dropped == "" && approved:
				toInsert = append(toInsert, x.OutboxID)
			}
			out = append(out, x)
			return nil
		}); err != nil {
			return fmt.Errorf("settle held repairs: %w", err)
		}
		for _, j := range deletes {
			// A running job of a dropped command was started without an
			// approval; the worker finds the command processed and completes it.
			if _, err := r.client.JobDeleteTx(ctx, tx, j); err != nil && !errors.Is(err, rivertype.ErrJobRunning) && !errors.Is(err, rivertype.ErrNotFound) {
				return fmt.Errorf("delete the job %d of a dropped repair: %w", j, err)
			}
		}
		for _, j := range retries {
			if _, err := r.client.JobRetryTx(ctx, tx, j); err != nil {
				return fmt.Errorf("make the job %d of an approved repair available: %w", j, err)
			}
		}
		if _, err := r.insert(ctx, tx, toInsert, false); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
