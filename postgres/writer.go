package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// Writer is the canonical writer: the only code that changes
// payments.status. Webhooks and repair commands both end here, in one
// conditional statement per command, so that racing callers cannot apply a
// transition twice or move a payment backwards.
//
// Every real transition is also a row of payment_transitions, written by
// the same statement (payrecon_transition), and then handed to the
// functions registered with OnTransition inside the same transaction.
type Writer struct {
	Clock payrecon.Clock

	hooks []TransitionFunc
}

// TransitionFunc runs inside the writer's transaction after each real
// transition (never for a command that changed nothing). Its error is
// returned by Apply or ApplyRepair, and the caller rolls the transaction
// back: the side effect and the status change commit together or not at
// all. It must not commit or roll back tx, and should be quick: the payment
// stays locked while it runs.
type TransitionFunc func(ctx context.Context, tx pgx.Tx, t payrecon.PaymentTransition) error

// OnTransition registers f to run after every real transition, in
// registration order. Register before the writer is used: OnTransition is
// not safe to call concurrently with Apply or ApplyRepair. Teams running the
// relay or the webhook's writer in their own service use it for side
// effects that must commit with the status change; payrecon's notifications
// are one (relay.Config.Notify).
func (w *Writer) OnTransition(f TransitionFunc) {
	if f != nil {
		w.hooks = append(w.hooks, f)
	}
}

// runHooks hands a real transition to the registered functions.
func (w *Writer) runHooks(ctx context.Context, tx pgx.Tx, t payrecon.PaymentTransition) error {
	for _, h := range w.hooks {
		if err := h(ctx, tx, t); err != nil {
			return fmt.Errorf("transition %d of payment %d: %w", t.ID, t.PaymentID, err)
		}
	}
	return nil
}

// NewWriter returns a writer on the given clock (the system clock if nil).
func NewWriter(clock payrecon.Clock) *Writer {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	return &Writer{Clock: clock}
}

// PaymentRef names a payment by id or, when ID is zero, by PaymentIntent id.
type PaymentRef struct {
	ID       int64
	IntentID string
}

func (r PaymentRef) String() string {
	if r.ID != 0 {
		return fmt.Sprintf("payment %d", r.ID)
	}
	return fmt.Sprintf("payment with intent %q", r.IntentID)
}

// ApplyResult says what one command did.
type ApplyResult struct {
	PaymentID int64
	Outcome   payrecon.Outcome
	// Before and After are the payment's status around the command.
	Before, After payrecon.LocalStatus
	// Version is the payment's version after a real transition.
	Version int64
	// Transition is the payment_transitions row of a real transition (ID
	// zero otherwise).
	Transition payrecon.PaymentTransition
}

// ErrUnknownCommand is returned for a command the transition table lacks.
var ErrUnknownCommand = errors.New("unknown command")

// Apply runs one command inside tx through the canonical writer's one
// transition (payrecon_transition), recording a real transition with source
// manual (ApplyFrom names another origin). It never fails because of the
// payment's state: a payment already in the target is AlreadyInTarget, one
// in any other state is MovedElsewhere, a missing one PaymentMissing.
func (w *Writer) Apply(ctx context.Context, tx pgx.Tx, cmd payrecon.Command, ref PaymentRef) (ApplyResult, error) {
	return w.ApplyFrom(ctx, tx, cmd, ref, payrecon.Origin{Source: payrecon.SourceManual})
}

// ApplyFrom is Apply recording origin on the transition (the webhook's
// and the catch-up's road: source webhook or events, the event id as ref).
// The functions registered with OnTransition run after a real transition;
// an error from one is returned, and tx must then be rolled back.
func (w *Writer) ApplyFrom(ctx context.Context, tx pgx.Tx, cmd payrecon.Command, ref PaymentRef, origin payrecon.Origin) (ApplyResult, error) {
	if !origin.Source.Valid() {
		return ApplyResult{}, fmt.Errorf("apply %q to %s: unknown transition source %q", cmd, ref, origin.Source)
	}
	t, ok := payrecon.TransitionFor(cmd)
	if !ok {
		return ApplyResult{}, fmt.Errorf("apply %q to %s: %w", cmd, ref, ErrUnknownCommand)
	}
	from := make([]string, len(t.From))
	for i, f := range t.From {
		from[i] = string(f)
	}
	r := transitionRow{now: w.Clock.Now(), origin: origin}
	err := tx.QueryRow(ctx, queries.Get("transition"), pgx.StrictNamedArgs{
		"payment_id": optionalID(ref.ID), "intent_id": optional(ref.IntentID),
		"target": string(t.To), "from": from, "now": r.now,
		"source": string(origin.Source), "source_ref": optional(origin.Ref),
	}).Scan(&r.paymentID, &r.before, &r.after, &r.version, &r.outcome, &r.transitionID)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply %s to %s: %w", cmd, ref, err)
	}
	res, err := r.result()
	if err != nil {
		return res, err
	}
	if res.Transition.ID != 0 {
		if err := w.runHooks(ctx, tx, res.Transition); err != nil {
			return res, fmt.Errorf("apply %s to %s: %w", cmd, ref, err)
		}
	}
	return res, nil
}

// transitionRow is what payrecon_transition returns.
// now and origin are what the caller passed, for the transition.
type transitionRow struct {
	paymentID, version *int64
	before, after      *string
	outcome            *string
	transitionID       *int64

	now    time.Time
	origin payrecon.Origin
}

// result turns the row into an ApplyResult; an outcome the domain does not
// know means the function and payrecon.Outcome have drifted apart.
func (r transitionRow) result() (ApplyResult, error) {
	var res ApplyResult
	if r.outcome == nil {
		return res, errors.New("transition returned no outcome")
	}
	res.Outcome = payrecon.Outcome(*r.outcome)
	if !res.Outcome.Valid() {
		return res, fmt.Errorf("transition returned outcome %q, which payrecon does not know", *r.outcome)
	}
	if r.paymentID != nil {
		res.PaymentID = *r.paymentID
	}
	if r.before != nil {
		res.Before, res.After = payrecon.LocalStatus(*r.before), payrecon.LocalStatus(*r.before)
	}
	if r.after != nil {
		res.After, res.Version = payrecon.LocalStatus(*r.after), *r.version
	}
	if r.transitionID != nil {
		res.Transition = payrecon.PaymentTransition{
			ID: *r.transitionID, PaymentID: res.PaymentID, From: res.Before, To: res.After, Version: res.Version,
			Source: r.origin.Source, SourceRef: r.origin.Ref, OccurredAt: r.now,
		}
	}
	return res, nil
}

// RepairPayload is the JSON payload of a repair command in the outbox.
type RepairPayload struct {
	PaymentID           int64                 `json:"payment_id"`
	FindingID           int64                 `json:"finding_id,omitempty"`
	ExpectedLocalStatus payrecon.LocalStatus  `json:"expected_local_status,omitempty"`
	IntentID            string                `json:"stripe_payment_intent_id,omitempty"`
	Observed            payrecon.StripeStatus `json:"observed_external_status,omitempty"`
}

// RepairResult says what applying one outbox command did.
type RepairResult struct {
	OutboxID int64
	Command  payrecon.Command
	Apply    ApplyResult
	// Resolved is true when the command's finding was closed.
	Resolved bool
	// Outcome is what was recorded on the outbox row.
	Outcome string
	// AlreadyProcessed: the row had been applied before; nothing was done.
	AlreadyProcessed bool
}

// InvalidCommandError is a command that can never be applied (unknown
// event_type, bad payload, missing row): retrying it cannot help.
type InvalidCommandError struct {
	OutboxID int64
	Reason   string
}

func (e *InvalidCommandError) Error() string {
	return fmt.Sprintf("outbox command %d is invalid: %s", e.OutboxID, e.Reason)
}

// HeldCommandError: the outbox command is held for review (repair mode
// review) and was not approved, so it was neither applied nor marked. Its
// job reached a worker without an approval (River's dashboard, relay
// --retry); approval (relay.Relay.Approve) makes it run again.
type HeldCommandError struct {
	OutboxID int64
}

func (e *HeldCommandError) Error() string {
	return fmt.Sprintf("outbox command %d is held for review: approve it first (payrecon repairs approve %d)", e.OutboxID, e.OutboxID)
}

// ApplyRepair applies outbox command outboxID inside tx and records its
// outcome on the outbox row, so that the effect and "done" commit together.
// The finding named in the payload is resolved only if the payment is in the
// command's target state afterwards; otherwise it stays open with the
// outcome noted. A finding that was already resolved (healed, superseded,
// or closed by a person) is not acted on. Applying the same row twice does
// nothing the second time. A command held for review and not approved is a
// *HeldCommandError, and nothing is written. All of it is one statement, one round trip
// (queries/apply_repair.sql): this is the relay's hot path.
func (w *Writer) ApplyRepair(ctx context.Context, tx pgx.Tx, outboxID int64) (RepairResult, error) {
	res := RepairResult{OutboxID: outboxID}
	cmds, targets, froms := transitionArrays()
	var (
		eventType                         string
		processed, unknown, findingAbsent bool
		held                              bool
		payloadErr, recorded              *string
		findingID                         *int64
		t                                 = transitionRow{now: w.Clock.Now(), origin: payrecon.Origin{Source: payrecon.SourceRepair, Ref: strconv.FormatInt(outboxID, 10)}}
	)
	err := tx.QueryRow(ctx, queries.Get("apply_repair"), pgx.StrictNamedArgs{
		"outbox_id": outboxID, "commands": cmds, "targets": targets, "froms": froms,
		"now": t.now, "source": string(payrecon.SourceRepair), "resolved_by": fmt.Sprintf("outbox:%d", outboxID),
		"repaired": string(payrecon.ResolvedRepaired), "already": string(payrecon.ResolvedAlreadyInTarget),
	}).Scan(&eventType, &processed, &unknown, &payloadErr, &findingAbsent, &findingID,
		&t.paymentID, &t.outcome, &t.before, &t.after, &t.version, &t.transitionID, &res.Resolved, &recorded, &held)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, &InvalidCommandError{OutboxID: outboxID, Reason: "no such outbox row"}
	}
	if err != nil {
		return res, fmt.Errorf("apply outbox command %d: %w", outboxID, err)
	}
	res.Command = payrecon.Command(eventType)
	switch {
	case processed:
		res.AlreadyProcessed = true
		return res, nil
	case unknown:
		return res, &InvalidCommandError{OutboxID: outboxID, Reason: fmt.Sprintf("unknown event_type %q", eventType)}
	case payloadErr != nil:
		return res, &InvalidCommandError{OutboxID: outboxID, Reason: *payloadErr}
	case findingAbsent:
		return res, &InvalidCommandError{OutboxID: outboxID, Reason: fmt.Sprintf("finding %d does not exist", *findingID)}
	case held:
		return res, &HeldCommandError{OutboxID: outboxID}
	}
	if recorded != nil {
		res.Outcome = *recorded
	}
	if t.outcome == nil { // the finding was already resolved: recorded as skipped
		return res, nil
	}
	if res.Apply, err = t.result(); err != nil {
		return res, fmt.Errorf("apply outbox command %d: %w", outboxID, err)
	}
	if res.Apply.Transition.ID != 0 {
		if err := w.runHooks(ctx, tx, res.Apply.Transition); err != nil {
			return res, fmt.Errorf("apply outbox command %d: %w", outboxID, err)
		}
	}
	return res, nil
}

// transitionArrays is the transition table as the parallel arrays
// apply_repair.sql joins against.
func transitionArrays() (cmds, targets, froms []string) {
	for _, t := range payrecon.Transitions() {
		from := make([]string, len(t.From))
		for i, f := range t.From {
			from[i] = string(f)
		}
		cmds = append(cmds, string(t.Command))
		targets = append(targets, string(t.To))
		froms = append(froms, strings.Join(from, ","))
	}
	return cmds, targets, froms
}
