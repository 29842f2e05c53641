package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// Transitions returns up to limit transitions of a payment, oldest first:
// its audit trail.
func (r *Findings) Transitions(ctx context.Context, paymentID int64, limit int) ([]payrecon.PaymentTransition, error) {
	rows, err := r.pool.Query(ctx, queries.Get("payment_transitions"), pgx.StrictNamedArgs{"payment_id": paymentID, "limit": limit})
	if err != nil {
		return nil, fmt.Errorf("transitions of payment %d: %w", paymentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (payrecon.PaymentTransition, error) {
		var t payrecon.PaymentTransition
		err := row.Scan(&t.ID, &t.PaymentID, &t.From, &t.To, &t.Version, &t.Source, &t.SourceRef, &t.OccurredAt)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("transitions of payment %d: %w", paymentID, err)
	}
	return out, nil
}

// LookupPayment finds the payment an operator names by id, order id or
// PaymentIntent id. None is payrecon.ErrNotFound; several (an id that is
// also another payment's order id) is an error listing them.
func (r *Findings) LookupPayment(ctx context.Context, q string) (payrecon.Payment, error) {
	q = strings.TrimSpace(q)
	var id *int64
	if n, err := strconv.ParseInt(q, 10, 64); err == nil {
		id = &n
	}
	rows, err := r.pool.Query(ctx, queries.Get("payment_lookup"), pgx.StrictNamedArgs{"id": id, "q": q})
	if err != nil {
		return payrecon.Payment{}, fmt.Errorf("look up payment %q: %w", q, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return payrecon.Payment{}, fmt.Errorf("look up payment %q: %w", q, err)
	}
	switch len(ids) {
	case 0:
		return payrecon.Payment{}, fmt.Errorf("no payment has id, order id or PaymentIntent id %q: %w", q, payrecon.ErrNotFound)
	case 1:
		return r.Payment(ctx, ids[0])
	}
	return payrecon.Payment{}, fmt.Errorf("%q names several payments (%v): give the payment id", q, ids)
}

// RepairCommand is a repair command of a payment, as `payments show`
// prints it.
type RepairCommand struct {
	OutboxID    int64      `json:"outbox_id"`
	EventType   string     `json:"event_type"`
	CreatedAt   time.Time  `json:"created_at"`
	ProcessedAt *time.Time `json:"processed_at,omitempty"`
	Outcome     string     `json:"outcome,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
}

// RepairCommands returns up to limit repair commands of a payment still in
// the outbox, oldest first.
func (r *Findings) RepairCommands(ctx context.Context, paymentID int64, limit int) ([]RepairCommand, error) {
	rows, err := r.pool.Query(ctx, queries.Get("payment_repairs"), pgx.StrictNamedArgs{"payment_id": paymentID, "limit": limit})
	if err != nil {
		return nil, fmt.Errorf("repair commands of payment %d: %w", paymentID, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RepairCommand, error) {
		var c RepairCommand
		err := row.Scan(&c.OutboxID, &c.EventType, &c.CreatedAt, &c.ProcessedAt, &c.Outcome, &c.LastError)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("repair commands of payment %d: %w", paymentID, err)
	}
	return out, nil
}
