package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// Status is everything `payrecon status` and the metrics report, read in
// a handful of cheap queries.
type Status struct {
	Now time.Time `json:"now"`
	// Rows is the size of payments: exact when RowsExact, else PostgreSQL's
	// planner estimate (cheap on any table size).
	Rows      int64 `json:"rows"`
	RowsExact bool  `json:"rows_exact"`
	// NewRowsPerHour is the growth G, measured over the last 24 hours.
	NewRowsPerHour float64 `json:"new_rows_per_hour"`
	// Lag is the reconciliation lag; LagKnown is false on an empty table.
	Lag      time.Duration `json:"lag_ns"`
	LagKnown bool          `json:"lag_known"`
	Jobs     []JobStatus   `json:"jobs"`
	// OpenFindings counts open findings by kind.
	OpenFindings      map[payrecon.Kind]int64 `json:"open_findings"`
	OpenFindingsTotal int64                   `json:"open_findings_total"`
	// ResolvedLastDay counts findings resolved in the last 24 hours, by kind
	// and resolution (repaired, healed, operator, …).
	ResolvedLastDay []ResolvedCount `json:"resolved_last_day"`
	// OutboxBacklog counts repair commands not yet applied; OutboxOldest is
	// the creation time of the oldest of them.
	OutboxBacklog int64     `json:"outbox_backlog"`
	OutboxOldest  time.Time `json:"outbox_oldest,omitzero"`
	// DeadLetters counts repair deliveries River gave up on (discarded or
	// cancelled), waiting for an operator.
	DeadLetters int64 `json:"dead_letters"`
	// HeldRepairs counts repair commands held for review (repair mode
	// review) whose finding is open, waiting for an approval; HeldOldest is
	// when the longest-waiting was held.
	HeldRepairs int64     `json:"held_repairs"`
	HeldOldest  time.Time `json:"held_oldest,omitzero"`
	// Events lists the events catch-up's cursors (none until it first ran).
	Events []EventsStatus `json:"events"`
	// Notifications is the queue of notifications to the application (set
	// by the caller with Monitor.Queue; nil when not read).
	Notifications *QueueStatus `json:"notifications,omitempty"`
}

// QueueStatus is one River job kind's queue.
type QueueStatus struct {
	// Backlog counts jobs waiting, running or retrying; Oldest is the
	// creation time of the oldest of them.
	Backlog int64     `json:"backlog"`
	Oldest  time.Time `json:"oldest,omitzero"`
	// DeadLetters counts jobs River gave up on (discarded or cancelled).
	DeadLetters int64 `json:"dead_letters"`
}

// Queue reads the queue of River job kind kind (relay.NotifyKind for the
// notifications).
func (m *Monitor) Queue(ctx context.Context, kind string) (QueueStatus, error) {
	var q QueueStatus
	var oldest *time.Time
	if err := m.pool.QueryRow(ctx, queries.Get("job_queue"), pgx.StrictNamedArgs{"kind": kind}).Scan(&q.Backlog, &oldest, &q.DeadLetters); err != nil {
		return q, fmt.Errorf("read the %s queue: %w", kind, err)
	}
	if oldest != nil {
		q.Oldest = *oldest
	}
	return q, nil
}

// ResolvedCount is a number of findings of one kind closed one way.
type ResolvedCount struct {
	Kind       payrecon.Kind       `json:"kind"`
	Resolution payrecon.Resolution `json:"resolution"`
	Count      int64               `json:"count"`
}

// JobStatus is one sweep job's progress and projection.
type JobStatus struct {
	Cycle
	// Progress is the share of the table swept in the current cycle.
	Progress float64 `json:"progress"`
	// Throughput is the measured sweep rate, rows per second of sweeping.
	Throughput float64 `json:"throughput_rows_per_second"`
	// Projection is the cycle-time arithmetic on live figures: N rows, G new
	// rows an hour, the measured throughput.
	Projection payrecon.PlanResult `json:"projection"`
	// Rechecks counts rows queued for an early recheck, by reason.
	Rechecks map[string]int `json:"rechecks"`
	// LeaseHolder is the session sweeping the job now, if any.
	LeaseHolder *LeaseHolder `json:"lease_holder,omitempty"`
	// Recent is true for a recent-window job (run --recent): it
	// re-verifies only the rows created within its window, so Progress
	// and Projection, which are about the whole table, are left out.
	Recent bool `json:"recent,omitempty"`
}

// ErrAccountsFigures: Figures read the platform's figures (returned) but
// not its accounts'.
var ErrAccountsFigures = errors.New("the accounts' figures were not read")

// Figures reads the figures every reader shows (`payrecon status`, the
// console's overview, the metrics): Status, and with accounts (the base
// sweep job of a platform's accounts, Connect) the accounts' figures, the
// platform's lag then being its worst account's. It is the one place that
// rule is applied.
func (m *Monitor) Figures(ctx context.Context, now time.Time, exact bool, repairKind, accounts string) (Status, *AccountsStatus, error) {
	st, err := m.Status(ctx, now, exact, repairKind)
	if err != nil || accounts == "" {
		return st, nil, err
	}
	as, err := m.AccountsStatus(ctx, st.Now, accounts)
	if err != nil {
		return st, nil, fmt.Errorf("%w: %w", ErrAccountsFigures, err)
	}
	st.Lag, st.LagKnown = as.Lag, as.Accounts > 0
	return st, &as, nil
}

// Status reads the figures. With exact, the row count is count(*) (a scan
// of the table); otherwise the planner's estimate, which is what metrics
// use on every scrape. repairKind is River's job kind for repair commands.
func (m *Monitor) Status(ctx context.Context, now time.Time, exact bool, repairKind string) (Status, error) {
	st := Status{Now: now, RowsExact: exact}
	rowsSQL := queries.Get("payments_rows_estimate")
	if exact {
		rowsSQL = queries.Get("payments_rows_exact")
	}
	if err := m.pool.QueryRow(ctx, rowsSQL).Scan(&st.Rows); err != nil {
		return st, fmt.Errorf("count payments: %w", err)
	}
	var day int64
	if err := m.pool.QueryRow(ctx, queries.Get("payments_created_since"), pgx.StrictNamedArgs{"since": now.Add(-24 * time.Hour)}).Scan(&day); err != nil {
		return st, fmt.Errorf("count new payments: %w", err)
	}
	st.NewRowsPerHour = float64(day) / 24
	if !exact && st.Rows < day {
		st.Rows = day // a fresh table whose statistics lag behind
	}
	var err error
	if st.Lag, st.LagKnown, err = m.Lag(ctx, now); err != nil {
		return st, err
	}
	cycles, err := m.Cycles(ctx, now)
	if err != nil {
		return st, err
	}
	for _, c := range cycles {
		if IsAccountJob(c.Job) && c.Job != m.show { // Connect: in the accounts summary (AccountsStatus)
			continue
		}
		j := JobStatus{Cycle: c, Throughput: c.Throughput(), Recent: strings.HasSuffix(c.Job, payrecon.RecentJobSuffix)}
		if st.Rows > 0 && !j.Recent {
			j.Progress = min(1, float64(c.CycleRows)/float64(st.Rows))
		}
		if !j.Recent {
			j.Projection = payrecon.Plan(payrecon.PlanInput{Rows: st.Rows, GrowthPerHour: st.NewRowsPerHour, RowsPerSecond: j.Throughput})
		}
		if j.LeaseHolder, err = LeaseHolderOf(ctx, m.pool, c.Job); err != nil {
			return st, err
		}
		if j.Rechecks, err = pendingRechecks(ctx, m.pool, c.Job); err != nil {
			return st, err
		}
		st.Jobs = append(st.Jobs, j)
	}
	if st.Events, err = m.EventsStatus(ctx, now); err != nil {
		return st, err
	}
	st.Events = slices.DeleteFunc(st.Events, func(e EventsStatus) bool {
		return IsAccountJob(e.Job) && !strings.HasSuffix(m.show, e.Job[strings.Index(e.Job, "/"):])
	})
	if st.OpenFindings, err = m.OpenFindingsByKind(ctx); err != nil {
		return st, err
	}
	for _, n := range st.OpenFindings {
		st.OpenFindingsTotal += n
	}
	rows, err := m.pool.Query(ctx, queries.Get("findings_resolved_since"), pgx.StrictNamedArgs{"since": now.Add(-24 * time.Hour)})
	if err != nil {
		return st, fmt.Errorf("count resolved findings: %w", err)
	}
	if st.ResolvedLastDay, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ResolvedCount]); err != nil {
		return st, fmt.Errorf("count resolved findings: %w", err)
	}
	var oldest *time.Time
	if err := m.pool.QueryRow(ctx, queries.Get("outbox_backlog")).Scan(&st.OutboxBacklog, &oldest); err != nil {
		return st, fmt.Errorf("count outbox backlog: %w", err)
	}
	if oldest != nil {
		st.OutboxOldest = *oldest
	}
	if err := m.pool.QueryRow(ctx, queries.Get("dead_letters"), pgx.StrictNamedArgs{"kind": repairKind}).Scan(&st.DeadLetters); err != nil {
		return st, fmt.Errorf("count dead letters: %w", err)
	}
	if st.HeldRepairs, st.HeldOldest, err = m.heldRepairs(ctx); err != nil {
		return st, err
	}
	return st, nil
}
