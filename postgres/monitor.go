package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// Monitor answers the monitoring queries the CLI and the metrics use.
type Monitor struct {
	pool *pgxpool.Pool
	// show is a connected account's job Status lists nonetheless.
	show string
}

// NewMonitor returns a monitor on pool.
func NewMonitor(pool *pgxpool.Pool) *Monitor { return &Monitor{pool: pool} }

// WithJob returns a monitor whose Status lists job even when it is a
// connected account's (status --account).
func (m *Monitor) WithJob(job string) *Monitor {
	c := *m
	c.show = job
	return &c
}

// Lag returns the reconciliation lag: how long ago the row least recently
// verified was verified (or created, if never). ok is false when the table
// is empty. It reads the sweep cursor and the recheck queue (queries/lag.sql),
// not payments' last_reconciled_at, which no index covers (so that a
// verification is a HOT update): a few rows, whatever the table size, once
// a cycle has completed.
func (m *Monitor) Lag(ctx context.Context, now time.Time) (lag time.Duration, ok bool, err error) {
	oldest, ok, err := oldestVerified(ctx, m.pool)
	if err != nil || !ok {
		return 0, ok, err
	}
	lag = now.Sub(oldest)
	if lag < 0 {
		lag = 0
	}
	return lag, true, nil
}

// Cycle is one sweep job's cycle figures.
type Cycle struct {
	Job    string `json:"job"`
	LastID int64  `json:"last_id"`
	// CycleStartedAt is when the current cycle began; CycleAge is now minus
	// that.
	CycleStartedAt time.Time     `json:"cycle_started_at"`
	CycleAge       time.Duration `json:"cycle_age"`
	// CycleRows and CycleBusy are the rows swept so far in this cycle and
	// the time spent sweeping them.
	CycleRows int64         `json:"cycle_rows"`
	CycleBusy time.Duration `json:"cycle_busy"`
	// LastCycleCompletedAt is zero when no cycle ever completed;
	// SinceLastCycle is now minus it.
	LastCycleCompletedAt time.Time     `json:"last_cycle_completed_at,omitzero"`
	SinceLastCycle       time.Duration `json:"since_last_cycle,omitempty"`
	// LastCycleDuration, LastCycleRows and LastCycleBusy describe the last
	// completed cycle.
	LastCycleDuration time.Duration `json:"last_cycle_duration,omitempty"`
	LastCycleRows     int64         `json:"last_cycle_rows,omitempty"`
	LastCycleBusy     time.Duration `json:"last_cycle_busy,omitempty"`
	// AdvancedAt is when the cursor last moved.
	AdvancedAt time.Time `json:"advanced_at,omitzero"`
}

// Throughput is the measured sweep rate in rows per second of sweeping:
// this cycle's if it has enough rows, else the last cycle's; zero when
// unknown.
func (c Cycle) Throughput() float64 {
	if c.CycleBusy > time.Second && c.CycleRows > 0 {
		return float64(c.CycleRows) / c.CycleBusy.Seconds()
	}
	if c.LastCycleBusy > 0 && c.LastCycleRows > 0 {
		return float64(c.LastCycleRows) / c.LastCycleBusy.Seconds()
	}
	if c.CycleBusy > 0 && c.CycleRows > 0 {
		return float64(c.CycleRows) / c.CycleBusy.Seconds()
	}
	return 0
}

// Cycles returns every job's cycle figures.
func (m *Monitor) Cycles(ctx context.Context, now time.Time) ([]Cycle, error) {
	rows, err := m.pool.Query(ctx, queries.Get("cycles"))
	if err != nil {
		return nil, fmt.Errorf("read cycles: %w", err)
	}
	defer rows.Close()
	var out []Cycle
	for rows.Next() {
		var (
			c                         Cycle
			completed, lastStart, adv *time.Time
			busy                      float64
			lastRows                  *int64
			lastBusy                  *float64
		)
		if err := rows.Scan(&c.Job, &c.LastID, &c.CycleStartedAt, &completed, &c.CycleRows, &busy,
			&lastStart, &lastRows, &lastBusy, &adv); err != nil {
			return nil, fmt.Errorf("read cycles: %w", err)
		}
		c.CycleAge = nonNegative(now.Sub(c.CycleStartedAt))
		c.CycleBusy = seconds(busy)
		if completed != nil {
			c.LastCycleCompletedAt = *completed
			c.SinceLastCycle = nonNegative(now.Sub(*completed))
			if lastStart != nil {
				c.LastCycleDuration = nonNegative(completed.Sub(*lastStart))
			}
		}
		if lastRows != nil {
			c.LastCycleRows = *lastRows
		}
		if lastBusy != nil {
			c.LastCycleBusy = seconds(*lastBusy)
		}
		if adv != nil {
			c.AdvancedAt = *adv
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cycles: %w", err)
	}
	return out, nil
}

// OpenFindingsByKind counts open findings per kind; kinds with none are
// absent.
func (m *Monitor) OpenFindingsByKind(ctx context.Context) (map[payrecon.Kind]int64, error) {
	rows, err := m.pool.Query(ctx, queries.Get("open_findings_by_kind"))
	if err != nil {
		return nil, fmt.Errorf("count open findings: %w", err)
	}
	defer rows.Close()
	out := map[payrecon.Kind]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, fmt.Errorf("count open findings: %w", err)
		}
		out[payrecon.Kind(k)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count open findings: %w", err)
	}
	return out, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// oldestVerified is the time of the least recent verification (or
// creation) of any payments row; ok is false when payments is empty.
func oldestVerified(ctx context.Context, pool *pgxpool.Pool) (time.Time, bool, error) {
	var oldest *time.Time
	err := pool.QueryRow(ctx, queries.Get("lag"), pgx.StrictNamedArgs{"recent_suffix": payrecon.RecentJobSuffix}).Scan(&oldest)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && oldest == nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("reconciliation lag: %w", err)
	}
	return *oldest, true, nil
}
