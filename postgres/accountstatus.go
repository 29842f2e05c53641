package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// AccountLag is one account's sweep, as status shows the worst of them.
type AccountLag struct {
	Job     string `json:"job"`
	Account string `json:"account"`
	// Lag is how long ago its rows were all verified (its last completed
	// cycle's start, or a queued recheck's last verification).
	Lag time.Duration `json:"lag_ns"`
	// LastCycleCompletedAt is zero when none completed yet.
	LastCycleCompletedAt time.Time `json:"last_cycle_completed_at,omitzero"`
	// Behind: it completed no cycle, or none within AccountsBehindAfter.
	Behind bool `json:"behind"`
}

// AccountsStatus summarises a platform's account sweeps: how many, how
// many behind, the worst by lag. Bounded in size however many accounts.
type AccountsStatus struct {
	Accounts int `json:"accounts"`
	// Completed counts the accounts that completed a cycle; Behind those
	// that never did, or not within BehindAfter.
	Completed   int           `json:"completed"`
	Behind      int           `json:"behind"`
	BehindAfter time.Duration `json:"behind_after_ns"`
	// Lag is the worst account's: the platform's reconciliation lag.
	Lag   time.Duration `json:"lag_ns"`
	Worst []AccountLag  `json:"worst"`
	// EventCursors counts the connected accounts' events catch-up cursors;
	// EventsWorstAge is the furthest behind of them, EventsWorstDelay the
	// longest last detection delay (Stripe's created → applied) among them:
	// the detection delay across accounts.
	EventCursors     int           `json:"event_cursors"`
	EventsWorstAge   time.Duration `json:"events_worst_age_ns"`
	EventsWorstDelay time.Duration `json:"events_worst_delay_ns"`
}

// AccountsBehindAfter is how old an account's last completed cycle may be
// before status counts it behind.
const AccountsBehindAfter = 24 * time.Hour

// EachAccount calls fn for every account job of base, the worst lag
// first: the one reading of an account's lag and of whether it is behind,
// which status, metrics and the console share.
func (m *Monitor) EachAccount(ctx context.Context, now time.Time, base string, fn func(AccountLag) error) error {
	rows, err := m.pool.Query(ctx, queries.Get("accounts_status"), pgx.StrictNamedArgs{
		"base": base, "prefix": likeEscape(base + "/" + payrecon.AccountPrefix)})
	if err != nil {
		return fmt.Errorf("read the accounts' sweeps: %w", err)
	}
	var (
		job       string
		since     time.Time
		completed *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&job, &since, &completed}, func() error {
		acct, ok := payrecon.AccountOfJob(base, job)
		if !ok {
			return nil
		}
		l := AccountLag{Job: job, Account: acct, Lag: nonNegative(now.Sub(since))}
		if completed != nil {
			l.LastCycleCompletedAt = *completed
		}
		l.Behind = completed == nil || now.Sub(*completed) > AccountsBehindAfter
		return fn(l)
	})
	if err != nil {
		return fmt.Errorf("read the accounts' sweeps: %w", err)
	}
	return nil
}

// AccountsStatus reads every account job of base.
func (m *Monitor) AccountsStatus(ctx context.Context, now time.Time, base string) (AccountsStatus, error) {
	st := AccountsStatus{BehindAfter: AccountsBehindAfter, Worst: []AccountLag{}}
	err := m.EachAccount(ctx, now, base, func(l AccountLag) error {
		st.Accounts++
		if !l.LastCycleCompletedAt.IsZero() {
			st.Completed++
		}
		if l.Behind {
			st.Behind++
		}
		if len(st.Worst) < 5 {
			st.Worst = append(st.Worst, l)
		}
		st.Lag = max(st.Lag, l.Lag)
		return nil
	})
	if err != nil {
		return st, err
	}
	events, err := m.EventsStatus(ctx, now)
	if err != nil {
		return st, err
	}
	for _, e := range events {
		if !IsAccountJob(e.Job) {
			continue
		}
		st.EventCursors++
		st.EventsWorstAge = max(st.EventsWorstAge, e.Age)
		st.EventsWorstDelay = max(st.EventsWorstDelay, e.LastDelay)
	}
	return st, nil
}

// IsAccountJob reports whether job is a connected account's (sweep or
// events catch-up): status lists those in its accounts summary, not one by
// one.
func IsAccountJob(job string) bool { return strings.Contains(job, "/"+payrecon.AccountPrefix) }

// likeEscape escapes LIKE's wildcards in s.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Volume is one account's rows and its rows created recently.
type Volume struct {
	Account string `json:"account"`
	Rows    int64  `json:"rows"`
	// Recent counts the rows created since the time asked for.
	Recent int64 `json:"recent"`
}

// AccountVolumes counts each account's rows, and those created since
// since (one scan of payments); without the account column, one Volume for
// every row.
func AccountVolumes(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, col AccountColumn, since time.Time) ([]Volume, error) {
	rows, err := db.Query(ctx, accountSQL(queries.Get("account_volumes"), col), pgx.StrictNamedArgs{"since": since})
	if err != nil {
		return nil, fmt.Errorf("count the accounts' rows: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Volume])
	if err != nil {
		return nil, fmt.Errorf("count the accounts' rows: %w", err)
	}
	return out, nil
}

// AccountVolume counts one account's rows ("" the platform's own), and
// those created since since, as AccountVolumes does for every account, on
// the account index. col must be found.
func AccountVolume(ctx context.Context, db interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, col AccountColumn, account string, since time.Time) (Volume, error) {
	v := Volume{Account: account}
	if !col.Found {
		return v, fmt.Errorf("count account %q's rows: payments has no account column", account)
	}
	err := db.QueryRow(ctx, accountSQL(queries.Get("account_volume"), col), pgx.StrictNamedArgs{"account": account, "since": since}).Scan(&v.Rows, &v.Recent)
	if err != nil {
		return v, fmt.Errorf("count account %q's rows: %w", account, err)
	}
	return v, nil
}
