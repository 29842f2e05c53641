package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"payrecon"
)

// Writer is the canonical writer: the only code that changes
// payments.status. Webhooks and repair commands both end here, in one
// conditional statement per command, so that racing callers cannot apply a
// transition twice or move a payment backwards.
type Writer struct {
	Clock payrecon.Clock
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
}

// ErrUnknownCommand is returned for a command the transition table lacks.
var ErrUnknownCommand = errors.New("unknown command")

// Apply runs one command inside tx through the canonical writer's one
// transition (payrecon_transition). It never fails because of the payment's
// state: a payment already in the target is AlreadyInTarget, one in any other
// state is MovedElsewhere, a missing one PaymentMissing.
func (w *Writer) Apply(ctx context.Context, tx pgx.Tx, cmd payrecon.Command, ref PaymentRef) (ApplyResult, error) {
	t, ok := payrecon.TransitionFor(cmd)
	if !ok {
		return ApplyResult{}, fmt.Errorf("apply %q to %s: %w", cmd, ref, ErrUnknownCommand)
	}
	from := make([]string, len(t.From))
	for i, f := range t.From {
		from[i] = string(f)
	}
	var r transitionRow
	err := tx.QueryRow(ctx, queries.Get("transition"), pgx.StrictNamedArgs{
		"payment_id": optionalID(ref.ID), "intent_id": optional(ref.IntentID),
		"target": string(t.To), "from": from, "now": w.Clock.Now(),
	}).Scan(&r.paymentID, &r.before, &r.after, &r.version, &r.outcome)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("apply %s to %s: %w", cmd, ref, err)
	}
	return r.result()
}

// transitionRow is what payrecon_transition returns.
type transitionRow struct {
	paymentID, version *int64
	before, after      *string
	outcome            *string
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

// ApplyRepair applies outbox command outboxID inside tx and records its
// outcome on the outbox row, so that the effect and "done" commit together.
// The finding named in the payload is resolved only if the payment is in the
// command's target state afterwards; otherwise it stays open with the
// outcome noted. A finding that was already resolved (healed, superseded,
// or closed by a person) is not acted on. Applying the same row twice does
// nothing the second time. All of it is one statement, one round trip
// (queries/apply_repair.sql): this is the relay's hot path.
func (w *Writer) ApplyRepair(ctx context.Context, tx pgx.Tx, outboxID int64) (RepairResult, error) {
	res := RepairResult{OutboxID: outboxID}
	cmds, targets, froms := transitionArrays()
	var (
		eventType                         string
		processed, unknown, findingAbsent bool
		payloadErr, recorded              *string
		findingID                         *int64
		t                                 transitionRow
	)
	err := tx.QueryRow(ctx, queries.Get("apply_repair"), pgx.StrictNamedArgs{
		"outbox_id": outboxID, "commands": cmds, "targets": targets, "froms": froms,
		"now": w.Clock.Now(), "resolved_by": fmt.Sprintf("outbox:%d", outboxID),
		"repaired": string(payrecon.ResolvedRepaired), "already": string(payrecon.ResolvedAlreadyInTarget),
	}).Scan(&eventType, &processed, &unknown, &payloadErr, &findingAbsent, &findingID,
		&t.paymentID, &t.outcome, &t.before, &t.after, &t.version, &res.Resolved, &recorded)
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
