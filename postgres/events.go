package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// Events records Stripe events and applies them through the canonical
// writer: the storage behind POST /webhooks/stripe (and the events
// catch-up). It implements payrecon.EventProcessor.
//
// Each event is processed in one transaction: its id is inserted into
// stripe_webhook_events first (a redelivery finds it and does nothing but
// report the first outcome), then the events that map onto a command go
// through the writer by PaymentIntent id. The writer never moves a payment
// backwards, so a late payment_failed after succeeded leaves it paid. An
// event for a PaymentIntent with no local row opens a missing_locally
// finding. Other event types are recorded without acting.
//
// The transitions it makes are recorded with source webhook and the event
// id as ref; WithSource returns the same store recording another source
// (the events catch-up's "events").
type Events struct {
	pool   *pgxpool.Pool
	writer *Writer
	clock  payrecon.Clock
	source payrecon.TransitionSource
	// Ignore lists the kinds never recorded (--ignore-kinds).
	Ignore map[payrecon.Kind]bool
	// RepairMode, when review or off, keeps events from moving payments:
	// an event that would is recorded with outcome payrecon.OutcomeHeld
	// (review: the decision table's finding opened with its repair command,
	// held by HoldFunc for an approval) or payrecon.OutcomeNotApplied (off:
	// the finding only). The zero value is apply.
	RepairMode payrecon.RepairMode
	// HoldFunc holds the repair commands queued under review
	// (relay.Relay.HoldFunc); review without it fails the event.
	HoldFunc EnqueueFunc
	// PayoutFunc, when set, is called in the event's transaction for a
	// payout event (payrecon.PayoutEventTypes) to queue a read of its
	// payout (settlement.EnqueueRead); without it, and for a
	// connected account's payouts (not read yet), payout events are
	// recorded and ignored.
	PayoutFunc PayoutFunc
	// Accounts, when found, makes every event be checked against the
	// account its payment's row records (Connect): one from another
	// account is never applied and opens account_mismatch.
	Accounts AccountColumn
	// Sessions, when found, makes the checkout.session.* events apply to
	// the row that records their session (matched by session id).
	Sessions SessionColumn
}

// PayoutFunc queues the read of a payout that an event named, inside the
// event's transaction: account "" is the platform's own.
type PayoutFunc func(ctx context.Context, tx pgx.Tx, account, payoutID, eventID string) error

var _ payrecon.EventProcessor = (*Events)(nil)

// NewEvents returns the event store on pool; clock (nil: the system clock)
// stamps received_at and the findings it opens.
func NewEvents(pool *pgxpool.Pool, writer *Writer, clock payrecon.Clock) *Events {
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	return &Events{pool: pool, writer: writer, clock: clock, source: payrecon.SourceWebhook}
}

// WithSource returns a copy of e that records the transitions it makes with
// source (payrecon.SourceEvents for the events catch-up). It panics on a
// source payrecon does not know: that is a programming error.
func (e *Events) WithSource(source payrecon.TransitionSource) *Events {
	if !source.Valid() {
		panic(fmt.Sprintf("postgres.Events.WithSource: unknown transition source %q", source))
	}
	c := *e
	c.source = source
	return &c
}

// ProcessEvent implements payrecon.EventProcessor.
func (e *Events) ProcessEvent(ctx context.Context, ev payrecon.Event) (payrecon.EventResult, error) {
	res := payrecon.EventResult{EventID: ev.ID}
	now := e.clock.Now()
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		var claimed string
		err := tx.QueryRow(ctx, queries.Get("claim_event"), pgx.StrictNamedArgs{
			"event_id": ev.ID, "event_type": ev.Type, "api_version": optional(ev.APIVersion),
			"intent_id": optional(ev.IntentID()), "created": optionalTime(ev.Created), "now": now,
		}).Scan(&claimed)
		if errors.Is(err, pgx.ErrNoRows) {
			res.Duplicate = true
			if err := tx.QueryRow(ctx, queries.Get("event_outcome"), pgx.StrictNamedArgs{"event_id": ev.ID}).Scan(&res.Outcome); err != nil {
				return fmt.Errorf("read outcome of event %s: %w", ev.ID, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("claim event %s: %w", ev.ID, err)
		}
		if err := e.apply(ctx, tx, ev, now, &res); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, queries.Get("record_event_outcome"), pgx.StrictNamedArgs{
			"event_id": ev.ID, "outcome": res.Outcome, "payment_id": optionalID(res.PaymentID),
		}); err != nil {
			return fmt.Errorf("record outcome of event %s: %w", ev.ID, err)
		}
		return nil
	})
	if err != nil {
		return payrecon.EventResult{}, err
	}
	return res, nil
}

// apply acts on a claimed event inside its transaction.
func (e *Events) apply(ctx context.Context, tx pgx.Tx, ev payrecon.Event, now time.Time, res *payrecon.EventResult) error {
	if mismatch, err := e.checkEventAccount(ctx, tx, ev, now, res); mismatch || err != nil {
		return err
	}
	if ev.SessionID() != "" && slices.Contains(payrecon.SessionEventTypes, ev.Type) {
		return e.applySession(ctx, tx, ev, now, res)
	}
	cmd, ok := payrecon.CommandForEvent(ev.Type)
	if id := ev.PayoutID(); !ok && id != "" {
		res.Outcome = payrecon.OutcomeIgnored
		// Only the platform's own payouts are read for now: a connected
		// account's payout event is recorded, not acted on.
		if e.PayoutFunc != nil && ev.Account == "" {
			if err := e.PayoutFunc(ctx, tx, "", id, ev.ID); err != nil {
				return fmt.Errorf("queue the read of payout %s (event %s): %w", id, ev.ID, err)
			}
			res.Outcome = payrecon.OutcomePayoutQueued
		}
		return nil
	}
	if !ok {
		if charge := payrecon.ChargeFromEvent(ev, now); charge != nil && ev.IntentID() != "" {
			return e.applyMoney(ctx, tx, ev, charge, now, res)
		}
		res.Outcome = payrecon.OutcomeIgnored
		return nil
	}
	var ar ApplyResult
	if e.RepairMode.Applies() {
		r, err := e.writer.ApplyFrom(ctx, tx, cmd, PaymentRef{IntentID: ev.IntentID()}, payrecon.Origin{Source: e.source, Ref: ev.ID})
		if err != nil {
			return fmt.Errorf("apply event %s: %w", ev.ID, err)
		}
		ar = r
		res.Outcome, res.PaymentID = string(ar.Outcome), ar.PaymentID
	} else {
		r, err := e.hold(ctx, tx, ev, cmd, ev.IntentID(), func() (int64, string, bool, error) { return paymentOfEvent(ctx, tx, ev) }, now, res)
		if err != nil {
			return fmt.Errorf("hold event %s: %w", ev.ID, err)
		}
		ar = r
	}
	if ar.Outcome != payrecon.PaymentMissing || e.Ignore[payrecon.KindMissingLocally] {
		return nil
	}
	status := ev.Object.Status
	if status == "" {
		status = string(payrecon.StatusAfterEvent(ev.Type))
	}
	ids, err := openMissingLocally(ctx, tx, []string{ev.IntentID()}, []string{status},
		fmt.Sprintf("webhook %s (%s) for a PaymentIntent with no local payments row", ev.Type, ev.ID), "webhook", now)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		res.FindingID = ids[0]
	}
	return nil
}

// hold is apply under repair mode review or off: the payment is not moved.
// What the writer would do is judged from the payment's status and the
// transition table; where it would move the payment, the decision table's
// finding for (local status, the status the event reports) is opened, with
// its repair command held for approval under review. The result is what
// the writer would have returned, except for a payment it would have moved:
// its Outcome is then empty, and res says held or not applied.
//
// find reads the event's payment and its status (found false when there is
// none); intentID is the PaymentIntent the row records, which the held
// command is judged for ("" for a session row).
func (e *Events) hold(ctx context.Context, tx pgx.Tx, ev payrecon.Event, cmd payrecon.Command, intentID string,
	find func() (int64, string, bool, error), now time.Time, res *payrecon.EventResult) (ApplyResult, error) {
	t, ok := payrecon.TransitionFor(cmd)
	if !ok {
		return ApplyResult{}, fmt.Errorf("hold %q: %w", cmd, ErrUnknownCommand)
	}
	id, status, found, err := find()
	if err != nil {
		return ApplyResult{}, err
	}
	if !found {
		res.Outcome = string(payrecon.PaymentMissing)
		return ApplyResult{Outcome: payrecon.PaymentMissing}, nil
	}
	local := payrecon.LocalStatus(status)
	ar := ApplyResult{PaymentID: id, Before: local, After: local}
	res.PaymentID = id
	switch {
	case local == t.To:
		ar.Outcome = payrecon.AlreadyInTarget
	case !slices.Contains(t.From, local):
		ar.Outcome = payrecon.MovedElsewhere
	}
	if ar.Outcome != "" {
		res.Outcome = string(ar.Outcome)
		return ar, nil
	}
	res.Outcome = payrecon.OutcomeNotApplied
	observed := payrecon.StatusAfterEvent(ev.Type)
	d := payrecon.Classify(local, observed)
	if d.Kind == "" || e.Ignore[d.Kind] {
		return ar, nil // a failed attempt: the decision table judges it in sync
	}
	var command *string
	if e.RepairMode.Queues() && d.Command != "" {
		c := string(d.Command)
		command = &c
	}
	if e.RepairMode.Holds() && e.HoldFunc == nil {
		return ar, errors.New("repair mode review needs a HoldFunc")
	}
	var findingID, outboxID *int64
	if err := tx.QueryRow(ctx, queries.Get("open_repair"), pgx.StrictNamedArgs{
		"payment_id": id, "intent_id": intentID, "kind": string(d.Kind), "verdict": string(d.Verdict),
		"local_status": status, "external_status": string(observed), "command": command,
		"reason": fmt.Sprintf("%s (%s %s, not applied: --repair-mode %s)", d.Reason, ev.Type, ev.ID, e.RepairMode),
		"job":    string(e.source), "now": now,
	}).Scan(&findingID, &outboxID); err != nil {
		return ar, fmt.Errorf("open the finding of event %s: %w", ev.ID, err)
	}
	if findingID != nil {
		res.FindingID = *findingID
	}
	if outboxID != nil && e.RepairMode.Holds() {
		if err := e.HoldFunc(ctx, tx, []int64{*outboxID}); err != nil {
			return ar, fmt.Errorf("hold the repair of event %s: %w", ev.ID, err)
		}
	}
	if e.RepairMode.Holds() {
		res.Outcome = payrecon.OutcomeHeld
	}
	return ar, nil
}

// paymentOfEvent reads the local payment of the event's PaymentIntent and
// its status, inside the event's transaction, without locking it; found is
// false when there is none.
func paymentOfEvent(ctx context.Context, tx pgx.Tx, ev payrecon.Event) (id int64, status string, found bool, err error) {
	err = tx.QueryRow(ctx, queries.Get("payment_status_by_intent"), pgx.StrictNamedArgs{"intent_id": ev.IntentID()}).Scan(&id, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", false, nil
	}
	if err != nil {
		return 0, "", false, fmt.Errorf("read the payment of event %s: %w", ev.ID, err)
	}
	return id, status, true, nil
}

// applyMoney opens the money findings a charge event shows (a refund, a
// dispute) on the event's payment at once, with the rules the sweep uses
// (payrecon.ClassifyMoney, judged from the charge alone), as needs_review
// findings; it never changes the payment. An intent with no local row is
// left to the sweep (it may not be payrecon's).
func (e *Events) applyMoney(ctx context.Context, tx pgx.Tx, ev payrecon.Event, charge *payrecon.Charge, now time.Time, res *payrecon.EventResult) error {
	id, status, found, err := paymentOfEvent(ctx, tx, ev)
	if err != nil {
		return err
	}
	if !found {
		res.Outcome = string(payrecon.PaymentMissing)
		return nil
	}
	res.PaymentID = id
	in := payrecon.Intent{ID: ev.IntentID(), Currency: charge.Currency, LatestCharge: charge}
	var drifts []payrecon.Drift
	for _, d := range payrecon.ClassifyMoney(payrecon.LocalStatus(status), payrecon.LocalMoney{}, in) {
		if slices.Contains(payrecon.MoneyEventKinds, d.Kind) && !e.Ignore[d.Kind] {
			drifts = append(drifts, d)
		}
	}
	res.Outcome = payrecon.OutcomeIgnored
	if len(drifts) == 0 {
		return nil
	}
	details := detailsOf(&in, nil, now)
	details.Status = ""
	rows, err := tx.Query(ctx, queries.Get("open_drifts"), pgx.StrictNamedArgs{
		"payment_id": id, "intent_id": ev.IntentID(), "local_status": status, "drifts": drifts,
		"verdict": string(payrecon.NeedsReview), "job": "webhook", "details": details, "now": now,
	})
	if err != nil {
		return fmt.Errorf("open money findings of event %s: %w", ev.ID, err)
	}
	var (
		fid  int64
		kind string
	)
	if _, err := pgx.ForEachRow(rows, []any{&fid, &kind}, func() error {
		if res.FindingID == 0 {
			res.FindingID = fid
		}
		return nil
	}); err != nil {
		return fmt.Errorf("open money findings of event %s: %w", ev.ID, err)
	}
	res.Outcome = payrecon.OutcomeMoneyFinding
	return nil
}

// openMissingLocally opens a missing_locally finding for each intent that
// has no local row and no open finding, and returns the new findings' ids.
func openMissingLocally(ctx context.Context, tx pgx.Tx, intents, statuses []string, reason, job string, now time.Time) ([]int64, error) {
	rows, err := tx.Query(ctx, queries.Get("open_missing_locally"), pgx.StrictNamedArgs{
		"intent_ids": intents, "statuses": statuses, "reason": reason, "job": job,
		"kind": string(payrecon.KindMissingLocally), "verdict": string(payrecon.NeedsReview),
		"local_status": string(payrecon.NoLocalRow), "now": now,
	})
	if err != nil {
		return nil, fmt.Errorf("open missing_locally findings for %d intents: %w", len(intents), err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("open missing_locally findings for %d intents: %w", len(intents), err)
	}
	return ids, nil
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// applySession applies a checkout.session.* event to the row that records
// its session (the session column; without it, or with no such row, to the
// row that records the session's PaymentIntent): through the canonical
// writer by payment id, with the same transitions, dedupe (the event id was
// claimed), ordering rules (the writer never moves a payment backwards) and
// transition log as a payment_intent.* event, or held or not applied under
// --repair-mode review or off. A session row that now accounts for the
// session's PaymentIntent closes an open missing_locally finding of that
// intent (its payment_intent.* events arrive first and found no row).
func (e *Events) applySession(ctx context.Context, tx pgx.Tx, ev payrecon.Event, now time.Time, res *payrecon.EventResult) error {
	cmd, ok := payrecon.CommandForSessionEvent(ev)
	if !ok {
		res.Outcome = payrecon.OutcomeIgnored // an asynchronous payment still processing
		return nil
	}
	id, status, account, found, err := e.paymentOfSession(ctx, tx, ev.SessionID())
	if err != nil {
		return err
	}
	if found && e.Accounts.Found && account != ev.Account {
		return e.accountMismatch(ctx, tx, ev, id, status, account, "", now, res)
	}
	ref, intentID := PaymentRef{ID: id}, ""
	find := func() (int64, string, bool, error) { return id, status, found, nil }
	if !found {
		if ev.IntentID() == "" {
			res.Outcome = string(payrecon.PaymentMissing)
			return nil
		}
		// A row that records the session's PaymentIntent (and perhaps no
		// session column at all): the intent's road.
		ref, intentID = PaymentRef{IntentID: ev.IntentID()}, ev.IntentID()
		find = func() (int64, string, bool, error) { return paymentOfEvent(ctx, tx, ev) }
	}
	if e.RepairMode.Applies() {
		ar, err := e.writer.ApplyFrom(ctx, tx, cmd, ref, payrecon.Origin{Source: e.source, Ref: ev.ID})
		if err != nil {
			return fmt.Errorf("apply event %s: %w", ev.ID, err)
		}
		res.Outcome, res.PaymentID = string(ar.Outcome), ar.PaymentID
	} else if _, err := e.hold(ctx, tx, ev, cmd, intentID, find, now, res); err != nil {
		return fmt.Errorf("hold event %s: %w", ev.ID, err)
	}
	if found && ev.IntentID() != "" && ref.ID != 0 {
		if _, err := tx.Exec(ctx, queries.Get("record_session_intents"), pgx.StrictNamedArgs{
			"payment_ids": []int64{id}, "session_ids": []string{ev.SessionID()}, "intent_ids": []string{ev.IntentID()}, "now": now,
		}); err != nil {
			return fmt.Errorf("keep the intent of checkout session %s (event %s): %w", ev.SessionID(), ev.ID, err)
		}
		if _, err := tx.Exec(ctx, queries.Get("resolve_orphans"), pgx.StrictNamedArgs{
			"intent_ids": []string{ev.IntentID()}, "now": now, "job": "webhook",
			"kind": string(payrecon.KindMissingLocally), "resolution": string(payrecon.ResolvedLocalRowAppeared),
		}); err != nil {
			return fmt.Errorf("close missing_locally of %s (event %s): %w", ev.IntentID(), ev.ID, err)
		}
	}
	return nil
}

// paymentOfSession reads the session row of a Checkout Session and its
// status, without locking it; found is false when there is none (or no
// session column).
func (e *Events) paymentOfSession(ctx context.Context, tx pgx.Tx, sessionID string) (id int64, status, account string, found bool, err error) {
	if !e.Sessions.Found {
		return 0, "", "", false, nil
	}
	err = tx.QueryRow(ctx, accountSQL(sessionSQL(queries.Get("payment_status_by_session"), e.Sessions), e.Accounts),
		pgx.StrictNamedArgs{"session_id": sessionID}).Scan(&id, &status, &account)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", "", false, nil
	}
	if err != nil {
		return 0, "", "", false, fmt.Errorf("read the payment of checkout session %s: %w", sessionID, err)
	}
	return id, status, account, true, nil
}
