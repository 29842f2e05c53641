package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
)

// DeadLetter is a command whose delivery ended without applying it: River
// discarded its job after the last attempt, or the relay cancelled it at once
// because the command is invalid.
//
// A notification to the application (kind NotifyKind) that River discarded
// after its last attempt is a dead letter too: it has a TransitionID
// instead of an OutboxID, and the EventType "notify".
type DeadLetter struct {
	JobID int64 `json:"job_id"`
	// Kind is the River job kind: Kind (a repair) or NotifyKind.
	Kind         string `json:"kind"`
	OutboxID     int64  `json:"outbox_id,omitempty"`
	TransitionID int64  `json:"transition_id,omitempty"`
	EventType    string `json:"event_type"`
	// State is River's job state: "discarded" (attempts exhausted) or
	// "cancelled" (invalid command).
	State     string `json:"state"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	// At is when the job ended.
	At time.Time `json:"at"`
}

// deadStates are the River job states that count as dead letters.
var deadStates = []rivertype.JobState{rivertype.JobStateDiscarded, rivertype.JobStateCancelled}

// DeadLetters lists up to limit dead letters (100 when limit ≤ 0), the most
// recent first.
func (r *Relay) DeadLetters(ctx context.Context, limit int) ([]DeadLetter, error) {
	if limit <= 0 {
		limit = 100
	}
	params := river.NewJobListParams().Kinds(Kind, NotifyKind).States(deadStates...).
		OrderBy(river.JobListOrderByFinalizedAt, river.SortOrderDesc).First(limit)
	res, err := r.client.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	jobs := make([]*rivertype.JobRow, 0, len(res.Jobs))
	ids := make([]int64, 0, len(res.Jobs))
	var notes []DeadLetter
	for _, j := range res.Jobs {
		if j.Kind == NotifyKind {
			var a NotifyArgs
			if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
				return nil, fmt.Errorf("list dead letters: decode args of job %d: %w", j.ID, err)
			}
			d := DeadLetter{JobID: j.ID, Kind: NotifyKind, TransitionID: a.TransitionID, EventType: "notify",
				State: string(j.State), Attempts: j.Attempt, LastError: lastError(j)}
			if j.FinalizedAt != nil {
				d.At = *j.FinalizedAt
			}
			notes = append(notes, d)
			continue
		}
		args, err := decodeArgs(j)
		if err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		jobs = append(jobs, j)
		ids = append(ids, args.OutboxID)
	}
	cmds, err := r.outboxCommands(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out := make([]DeadLetter, len(jobs))
	for i, j := range jobs {
		c := cmds[ids[i]]
		d := DeadLetter{JobID: j.ID, Kind: Kind, OutboxID: ids[i], EventType: c.eventType, State: string(j.State),
			Attempts: j.Attempt, LastError: lastError(j)}
		if d.LastError == "" {
			d.LastError = c.lastError
		}
		if j.FinalizedAt != nil {
			d.At = *j.FinalizedAt
		}
		out[i] = d
	}
	out = append(out, notes...)
	slices.SortStableFunc(out, func(a, b DeadLetter) int { return b.At.Compare(a.At) })
	return out, nil
}

// ErrNotRetryable: Retry on a job that is running, already completed, or
// held for review (pending: approval is the only way it runs).
var ErrNotRetryable = errors.New("job cannot be retried")

// Retry makes a repair or notification job available to run now (River's
// JobRetry): a dead letter after its cause is fixed, or a job waiting for
// its next retry. A discarded job gets one more attempt. Completed and
// running jobs are refused with ErrNotRetryable; an unknown job id, or a job
// of another kind, is payrecon.ErrNotFound.
func (r *Relay) Retry(ctx context.Context, jobID int64) (JobInfo, error) {
	j, err := r.client.JobGet(ctx, jobID)
	if errors.Is(err, rivertype.ErrNotFound) || (err == nil && j.Kind != Kind && j.Kind != NotifyKind) {
		return JobInfo{}, fmt.Errorf("retry job %d: no repair or notification job with that id: %w", jobID, payrecon.ErrNotFound)
	}
	if err != nil {
		return JobInfo{}, fmt.Errorf("retry job %d: %w", jobID, err)
	}
	switch j.State {
	case rivertype.JobStateCompleted, rivertype.JobStateRunning:
		return jobInfo(j), fmt.Errorf("retry job %d: it is %s: %w", jobID, j.State, ErrNotRetryable)
	case rivertype.JobStatePending:
		// A repair held for review: only an approval lets it run.
		return jobInfo(j), fmt.Errorf("retry job %d: its repair is held for review; approve it instead (payrecon repairs approve): %w", jobID, ErrNotRetryable)
	}
	j, err = r.client.JobRetry(ctx, jobID)
	if err != nil {
		return JobInfo{}, fmt.Errorf("retry job %d: %w", jobID, err)
	}
	r.log.Info("relay: job retried by an operator", slog.Int64("job_id", jobID), slog.String("kind", j.Kind),
		slog.String("args", string(j.EncodedArgs)), slog.Int("max_attempts", j.MaxAttempts))
	return jobInfo(j), nil
}

// DeliveryState summarises where a command's delivery stands.
type DeliveryState string

// Delivery states.
const (
	// DeliveryApplied: the command was applied (outbox processed_at is set).
	DeliveryApplied DeliveryState = "applied"
	// DeliveryQueued: its job waits for a worker.
	DeliveryQueued DeliveryState = "queued"
	// DeliveryRunning: a worker is applying it.
	DeliveryRunning DeliveryState = "running"
	// DeliveryRetrying: an attempt failed; River will try again.
	DeliveryRetrying DeliveryState = "retrying"
	// DeliveryDeadLetter: the job was discarded or cancelled; an operator
	// can retry it.
	DeliveryDeadLetter DeliveryState = "dead_letter"
	// DeliveryHeld: the command is held for review (repair mode review);
	// its job waits, pending, for an approval (Approve).
	DeliveryHeld DeliveryState = "held"
	// DeliveryDropped: the command was held and its finding closed before
	// an approval: it was never applied (outcome "dropped: …").
	DeliveryDropped DeliveryState = "dropped"
	// DeliveryNotEnqueued: the command has no job (see EnqueueUnprocessed).
	DeliveryNotEnqueued DeliveryState = "not_enqueued"
	// DeliveryCompletedUnapplied: the job completed but the outbox row is
	// not marked processed, which the relay never does; someone changed
	// the row by hand.
	DeliveryCompletedUnapplied DeliveryState = "completed_unapplied"
)

// JobInfo is the part of a River job an operator needs.
type JobInfo struct {
	ID          int64     `json:"id"`
	State       string    `json:"state"`
	Attempt     int       `json:"attempt"`
	MaxAttempts int       `json:"max_attempts"`
	ScheduledAt time.Time `json:"scheduled_at"`
	FinalizedAt time.Time `json:"finalized_at,omitzero"`
	LastError   string    `json:"last_error,omitempty"`
}

// Delivery is the state of one outbox command and its job.
type Delivery struct {
	OutboxID    int64         `json:"outbox_id"`
	EventType   string        `json:"event_type"`
	State       DeliveryState `json:"state"`
	CreatedAt   time.Time     `json:"created_at"`
	ProcessedAt time.Time     `json:"processed_at,omitzero"`
	Outcome     string        `json:"outcome,omitempty"`
	LastError   string        `json:"last_error,omitempty"`
	// Job is the delivery job; nil when there is none.
	Job *JobInfo `json:"job,omitempty"`
}

// Delivery looks up the command outboxID and its job. A missing outbox row
// is payrecon.ErrNotFound.
func (r *Relay) Delivery(ctx context.Context, outboxID int64) (Delivery, error) {
	cmds, err := r.outboxCommands(ctx, []int64{outboxID})
	if err != nil {
		return Delivery{}, fmt.Errorf("delivery of outbox %d: %w", outboxID, err)
	}
	c, ok := cmds[outboxID]
	if !ok {
		return Delivery{}, fmt.Errorf("delivery of outbox %d: %w", outboxID, payrecon.ErrNotFound)
	}
	d := Delivery{OutboxID: outboxID, EventType: c.eventType, CreatedAt: c.createdAt,
		ProcessedAt: c.processedAt, Outcome: c.outcome, LastError: c.lastError}
	params := river.NewJobListParams().Kinds(Kind).
		Where("args @> @args::jsonb", river.NamedArgs{"args": `{"outbox_id":` + strconv.FormatInt(outboxID, 10) + `}`}).
		OrderBy(river.JobListOrderByID, river.SortOrderDesc).First(1)
	res, err := r.client.JobList(ctx, params)
	if err != nil {
		return Delivery{}, fmt.Errorf("delivery of outbox %d: find its job: %w", outboxID, err)
	}
	if len(res.Jobs) > 0 {
		info := jobInfo(res.Jobs[0])
		d.Job = &info
	}
	d.State = deliveryState(d)
	return d, nil
}

func deliveryState(d Delivery) DeliveryState {
	switch {
	case !d.ProcessedAt.IsZero() && strings.HasPrefix(d.Outcome, OutcomeDroppedPrefix):
		return DeliveryDropped
	case !d.ProcessedAt.IsZero():
		return DeliveryApplied
	case d.Job == nil:
		return DeliveryNotEnqueued
	}
	switch rivertype.JobState(d.Job.State) {
	case rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
		return DeliveryDeadLetter
	case rivertype.JobStateRunning:
		return DeliveryRunning
	case rivertype.JobStateCompleted:
		return DeliveryCompletedUnapplied
	case rivertype.JobStateRetryable:
		return DeliveryRetrying
	case rivertype.JobStatePending:
		return DeliveryHeld
	}
	if d.Job.Attempt > 0 {
		return DeliveryRetrying
	}
	return DeliveryQueued
}

func jobInfo(j *rivertype.JobRow) JobInfo {
	info := JobInfo{ID: j.ID, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		ScheduledAt: j.ScheduledAt, LastError: lastError(j)}
	if j.FinalizedAt != nil {
		info.FinalizedAt = *j.FinalizedAt
	}
	return info
}

// lastError is the error of the job's latest failed attempt.
func lastError(j *rivertype.JobRow) string {
	if len(j.Errors) == 0 {
		return ""
	}
	return j.Errors[len(j.Errors)-1].Error
}

func decodeArgs(j *rivertype.JobRow) (RepairArgs, error) {
	var a RepairArgs
	if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
		return a, fmt.Errorf("decode args of job %d: %w", j.ID, err)
	}
	return a, nil
}

type outboxCommand struct {
	eventType   string
	createdAt   time.Time
	processedAt time.Time
	outcome     string
	lastError   string
}

// outboxCommands loads outbox rows by id.
func (r *Relay) outboxCommands(ctx context.Context, ids []int64) (map[int64]outboxCommand, error) {
	out := make(map[int64]outboxCommand, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := r.pool.Query(ctx, queries.Get("outbox_commands"), pgx.StrictNamedArgs{"ids": ids})
	if err != nil {
		return nil, fmt.Errorf("load outbox commands: %w", err)
	}
	var (
		id                 int64
		c                  outboxCommand
		processed          *time.Time
		outcome, lastError *string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &c.eventType, &c.createdAt, &processed, &outcome, &lastError}, func() error {
		x := c
		if processed != nil {
			x.processedAt = *processed
		}
		if outcome != nil {
			x.outcome = *outcome
		}
		if lastError != nil {
			x.lastError = *lastError
		}
		out[id] = x
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load outbox commands: %w", err)
	}
	return out, nil
}
