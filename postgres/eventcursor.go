package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// EventCursors keeps the events catch-up's cursors (stripe_events_cursor,
// migration 00009). It implements payrecon.EventCursorStore: every write is
// a compare-and-set on the cursor's event id.
type EventCursors struct {
	pool *pgxpool.Pool
}

var _ payrecon.EventCursorStore = (*EventCursors)(nil)

// NewEventCursors returns the cursor store on pool.
func NewEventCursors(pool *pgxpool.Pool) *EventCursors { return &EventCursors{pool: pool} }

// ReadEventCursor implements payrecon.EventCursorStore.
func (s *EventCursors) ReadEventCursor(ctx context.Context, job string, startFrom, now time.Time) (payrecon.EventCursor, error) {
	c := payrecon.EventCursor{Job: job}
	var (
		id               *string
		created, checked *time.Time
	)
	read := func() error {
		return s.pool.QueryRow(ctx, queries.Get("events_cursor_read"), pgx.StrictNamedArgs{
			"job": job, "start_from": startFrom, "now": now,
		}).Scan(&id, &created, &c.StartFrom, &checked)
	}
	err := read()
	if errors.Is(err, pgx.ErrNoRows) {
		// Another catcher inserted the row concurrently: this statement's
		// snapshot predates it. The next one sees it.
		err = read()
	}
	if err != nil {
		return c, fmt.Errorf("read events cursor %q: %w", job, err)
	}
	if id != nil {
		c.EventID = *id
	}
	if created != nil {
		c.EventCreated = *created
	}
	if checked != nil {
		c.CheckedAt = *checked
	}
	return c, nil
}

// AdvanceEventCursor implements payrecon.EventCursorStore.
func (s *EventCursors) AdvanceEventCursor(ctx context.Context, a payrecon.EventAdvance) error {
	var delay *float64
	if a.Delay > 0 {
		d := a.Delay.Seconds()
		delay = &d
	}
	advance := func(ctx context.Context, db interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}) error {
		tag, err := db.Exec(ctx, queries.Get("events_cursor_advance"), pgx.StrictNamedArgs{
			"job": a.Job, "from": optional(a.From), "to": a.To, "to_created": a.ToCreated,
			"outcome": a.Outcome, "delay_seconds": delay, "now": a.Now,
		})
		if err != nil {
			return fmt.Errorf("advance events cursor %q to %s: %w", a.Job, a.To, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("advance events cursor %q from %q: %w", a.Job, a.From, payrecon.ErrConcurrentRun)
		}
		return nil
	}
	if a.Fence == 0 {
		return advance(ctx, s.pool)
	}
	// Under a lease: the fence and the advance in one transaction.
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkFence(ctx, tx, a.Job, a.Fence); err != nil {
			return err
		}
		return advance(ctx, tx)
	})
}

// CountEventOutcome implements payrecon.EventCursorStore.
func (s *EventCursors) CountEventOutcome(ctx context.Context, a payrecon.EventAdvance) error {
	var delay *float64
	if a.Delay > 0 {
		d := a.Delay.Seconds()
		delay = &d
	}
	if _, err := s.pool.Exec(ctx, queries.Get("events_cursor_count"), pgx.StrictNamedArgs{
		"job": a.Job, "outcome": a.Outcome, "delay_seconds": delay, "now": a.Now,
	}); err != nil {
		return fmt.Errorf("count event %s's outcome on events cursor %q: %w", a.To, a.Job, err)
	}
	return nil
}

// ProcessedEvents implements payrecon.EventCursorStore.
func (s *EventCursors) ProcessedEvents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, queries.Get("events_processed"), pgx.StrictNamedArgs{"ids": ids})
	if err != nil {
		return nil, fmt.Errorf("look up %d processed events: %w", len(ids), err)
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look up %d processed events: %w", len(ids), err)
	}
	for _, id := range seen {
		out[id] = true
	}
	return out, nil
}

// MarkEventCursorChecked implements payrecon.EventCursorStore.
func (s *EventCursors) MarkEventCursorChecked(ctx context.Context, job, eventID string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, queries.Get("events_cursor_checked"), pgx.StrictNamedArgs{
		"job": job, "event_id": optional(eventID), "now": now,
	})
	if err != nil {
		return fmt.Errorf("mark events cursor %q checked: %w", job, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("mark events cursor %q checked at %q: %w", job, eventID, payrecon.ErrConcurrentRun)
	}
	return nil
}

// ResetEventCursor implements payrecon.EventCursorStore.
func (s *EventCursors) ResetEventCursor(ctx context.Context, r payrecon.EventCursorReset) error {
	tag, err := s.pool.Exec(ctx, queries.Get("events_cursor_reset"), pgx.StrictNamedArgs{
		"job": r.Job, "from": optional(r.From), "start_from": r.StartFrom,
		"lost_from": optionalTime(r.LostFrom), "lost_to": optionalTime(r.LostTo), "reason": r.Reason, "now": r.Now,
	})
	if err != nil {
		return fmt.Errorf("reset events cursor %q: %w", r.Job, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("reset events cursor %q from %q: %w", r.Job, r.From, payrecon.ErrConcurrentRun)
	}
	return nil
}

// EventsStatus is one events catch-up job as `status` and the metrics show
// it.
type EventsStatus struct {
	payrecon.EventCursor
	// Age is how far behind the catch-up may be: now minus CheckedAt (the
	// last round that reached the newest event), or minus StartFrom when no
	// round ever did.
	Age        time.Duration `json:"age_ns"`
	AdvancedAt time.Time     `json:"advanced_at,omitzero"`
	// Outcomes counts the events processed, by outcome.
	Outcomes map[string]int64 `json:"outcomes"`
	// LastAppliedAt and LastDelay describe the last event the catch-up
	// recorded before the webhook did: when, and how long after Stripe
	// created it.
	LastAppliedAt time.Time     `json:"last_applied_at,omitzero"`
	LastDelay     time.Duration `json:"last_delay_ns,omitempty"`
	// Resets counts restarts from a time; Losses those that left events
	// uncaught (older than Stripe keeps), the last between LostFrom and
	// LostTo.
	Resets      int64     `json:"resets"`
	Losses      int64     `json:"losses"`
	ResetAt     time.Time `json:"reset_at,omitzero"`
	ResetReason string    `json:"reset_reason,omitempty"`
	LostFrom    time.Time `json:"lost_from,omitzero"`
	LostTo      time.Time `json:"lost_to,omitzero"`
	// LeaseHolder is the session catching up now, if any.
	LeaseHolder *LeaseHolder `json:"lease_holder,omitempty"`
}

// EventsStatus reads every events catch-up cursor.
func (m *Monitor) EventsStatus(ctx context.Context, now time.Time) ([]EventsStatus, error) {
	rows, err := m.pool.Query(ctx, queries.Get("events_cursor_status"))
	if err != nil {
		return nil, fmt.Errorf("read events cursors: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (EventsStatus, error) {
		var (
			e                                       EventsStatus
			id, reason                              *string
			created, checked, adv, applied, resetAt *time.Time
			lostFrom, lostTo                        *time.Time
			delay                                   *float64
		)
		err := row.Scan(&e.Job, &id, &created, &e.StartFrom, &checked, &adv, &e.Outcomes,
			&applied, &delay, &e.Resets, &e.Losses, &resetAt, &reason, &lostFrom, &lostTo)
		set := func(dst *time.Time, src *time.Time) {
			if src != nil {
				*dst = *src
			}
		}
		if id != nil {
			e.EventID = *id
		}
		if reason != nil {
			e.ResetReason = *reason
		}
		if delay != nil {
			e.LastDelay = seconds(*delay)
		}
		set(&e.EventCreated, created)
		set(&e.CheckedAt, checked)
		set(&e.AdvancedAt, adv)
		set(&e.LastAppliedAt, applied)
		set(&e.ResetAt, resetAt)
		set(&e.LostFrom, lostFrom)
		set(&e.LostTo, lostTo)
		if e.CheckedAt.IsZero() {
			e.Age = nonNegative(now.Sub(e.StartFrom))
		} else {
			e.Age = nonNegative(now.Sub(e.CheckedAt))
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read events cursors: %w", err)
	}
	for i := range out {
		if out[i].LeaseHolder, err = LeaseHolderOf(ctx, m.pool, out[i].Job); err != nil {
			return nil, err
		}
	}
	return out, nil
}
