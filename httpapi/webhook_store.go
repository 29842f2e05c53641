package httpapi

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"payrecon"
	"payrecon/postgres"
)

// Outcome of an event that payrecon records without acting on.
const outcomeIgnored = "ignored"

// eventResult is what processing one event did; it is also the body of the
// 200 answer.
type eventResult struct {
	EventID string `json:"event_id"`
	// Outcome is the writer's outcome (applied, already_in_target,
	// moved_elsewhere, payment_missing) or "ignored"; for a duplicate, the
	// outcome recorded by the first delivery.
	Outcome string `json:"outcome"`
	// Duplicate is true for a redelivery of an event already processed.
	Duplicate bool  `json:"duplicate,omitempty"`
	PaymentID int64 `json:"payment_id,omitempty"`
	// FindingID is the missing_locally finding this event opened.
	FindingID int64 `json:"finding_id,omitempty"`
}

// processEvent records the event and applies it, in one transaction.
func processEvent(ctx context.Context, d Deps, ev stripeEvent) (eventResult, error) {
	res := eventResult{EventID: ev.ID}
	now := d.Clock.Now()
	var created *time.Time
	if ev.Created > 0 {
		t := time.Unix(ev.Created, 0)
		created = &t
	}
	err := pgx.BeginFunc(ctx, d.DB, func(tx pgx.Tx) error {
		var claimed string
		err := tx.QueryRow(ctx, query("claim_event"), ev.ID, ev.Type, optional(ev.APIVersion),
			optional(ev.intentID()), created, now).Scan(&claimed)
		if errors.Is(err, pgx.ErrNoRows) {
			res.Duplicate = true
			if err := tx.QueryRow(ctx, query("event_outcome"), ev.ID).Scan(&res.Outcome); err != nil {
				return fmt.Errorf("read outcome of event %s: %w", ev.ID, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("claim event %s: %w", ev.ID, err)
		}
		cmd, ok := payrecon.CommandForEvent(ev.Type)
		if !ok {
			res.Outcome = outcomeIgnored
		} else {
			ar, err := d.Writer.Apply(ctx, tx, cmd, postgres.PaymentRef{IntentID: ev.intentID()})
			if err != nil {
				return fmt.Errorf("apply event %s: %w", ev.ID, err)
			}
			res.Outcome, res.PaymentID = string(ar.Outcome), ar.PaymentID
			if ar.Outcome == payrecon.PaymentMissing {
				if res.FindingID, err = openMissingLocally(ctx, tx, ev, now); err != nil {
					return err
				}
			}
		}
		var pid *int64
		if res.PaymentID != 0 {
			pid = &res.PaymentID
		}
		if _, err := tx.Exec(ctx, query("record_outcome"), ev.ID, res.Outcome, pid); err != nil {
			return fmt.Errorf("record outcome of event %s: %w", ev.ID, err)
		}
		return nil
	})
	if err != nil {
		return eventResult{}, err
	}
	return res, nil
}

// openMissingLocally records a missing_locally finding for the event's
// PaymentIntent, unless one is open; it returns the new finding's id, or 0.
func openMissingLocally(ctx context.Context, tx pgx.Tx, ev stripeEvent, now time.Time) (int64, error) {
	status := ev.Data.Object.Status
	if status == "" {
		status = string(statusAfter(ev.Type))
	}
	reason := fmt.Sprintf("webhook %s (%s) for a PaymentIntent with no local payments row", ev.Type, ev.ID)
	var id int64
	err := tx.QueryRow(ctx, query("open_missing_locally"), ev.intentID(), status, reason, now,
		string(payrecon.KindMissingLocally), string(payrecon.NeedsReview)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil // already open
	}
	if err != nil {
		return 0, fmt.Errorf("open missing_locally finding for %s: %w", ev.intentID(), err)
	}
	return id, nil
}

// statusAfter is the PaymentIntent status a handled event reports, for
// events whose data.object carries none.
func statusAfter(eventType string) payrecon.StripeStatus {
	switch eventType {
	case payrecon.EventPaymentIntentSucceeded:
		return payrecon.IntentSucceeded
	case payrecon.EventPaymentIntentCanceled:
		return payrecon.IntentCanceled
	case payrecon.EventPaymentIntentPaymentFailed:
		return payrecon.IntentRequiresPaymentMethod
	}
	return payrecon.Unknown
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

//go:embed queries/*.sql
var queryFiles embed.FS

// query returns the embedded statement queries/<name>.sql.
func query(name string) string {
	b, err := queryFiles.ReadFile("queries/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("httpapi: no query %q: %v", name, err))
	}
	return strings.TrimSpace(string(b))
}
