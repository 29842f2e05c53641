package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// HeldRepair is a repair command held for review (repair mode review) whose
// finding is still open: what an operator approves.
type HeldRepair struct {
	// OutboxID is the command's id: what `payrecon repairs approve` takes.
	OutboxID int64            `json:"outbox_id"`
	Command  payrecon.Command `json:"command"`
	HeldAt   time.Time        `json:"held_at"`
	// The finding the command repairs, as it was detected.
	FindingID      int64         `json:"finding_id"`
	Kind           payrecon.Kind `json:"kind"`
	PaymentID      *int64        `json:"payment_id"`
	IntentID       string        `json:"stripe_payment_intent_id,omitempty"`
	LocalStatus    string        `json:"local_status"`
	ExternalStatus string        `json:"external_status,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	DetectedAt     time.Time     `json:"detected_at"`
	// Job is the road that found it: a sweep job, "webhook" or "events".
	Job string `json:"job,omitempty"`
	// OrderID and Status are the payment's now (empty when it is gone).
	OrderID string `json:"order_id,omitempty"`
	Status  string `json:"status_now,omitempty"`
}

// HeldRepairs lists up to limit held repair commands whose finding is open,
// the longest-waiting first.
func (m *Monitor) HeldRepairs(ctx context.Context, limit int) ([]HeldRepair, error) {
	return heldRepairs(ctx, m.pool, limit)
}

// querier is what heldRepairs reads through: a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func heldRepairs(ctx context.Context, q querier, limit int) ([]HeldRepair, error) {
	rows, err := q.Query(ctx, queries.Get("held_repairs"), pgx.StrictNamedArgs{"limit": limit})
	if err != nil {
		return nil, fmt.Errorf("list held repairs: %w", err)
	}
	out := []HeldRepair{}
	var (
		h                                         HeldRepair
		intent, external, job, orderID, statusNow *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&h.OutboxID, &h.Command, &h.HeldAt, &h.FindingID, &h.Kind, &h.PaymentID, &intent,
		&h.LocalStatus, &external, &h.Reason, &h.DetectedAt, &job, &orderID, &statusNow}, func() error {
		x := h
		x.IntentID, x.ExternalStatus, x.Job = orZero(intent), orZero(external), orZero(job)
		x.OrderID, x.Status = orZero(orderID), orZero(statusNow)
		if h.PaymentID != nil {
			id := *h.PaymentID
			x.PaymentID = &id
		}
		out = append(out, x)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list held repairs: %w", err)
	}
	return out, nil
}

// heldRepairs counts the held repair commands whose finding is open and
// returns when the longest-waiting was held.
func (m *Monitor) heldRepairs(ctx context.Context) (int64, time.Time, error) {
	var (
		n      int64
		oldest *time.Time
	)
	if err := m.pool.QueryRow(ctx, queries.Get("held_repairs_count")).Scan(&n, &oldest); err != nil {
		return 0, time.Time{}, fmt.Errorf("count held repairs: %w", err)
	}
	return n, orZero(oldest), nil
}
