package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// consoleQuery returns queries/<name>.sql, one of the console's
// statements (console_*.sql).
func consoleQuery(name string) string { return queries.Get(name) }

// namedParam finds a statement's named parameters.
var namedParam = regexp.MustCompile(`@([a-z_]+)`)

// argsFor picks from all the arguments the statement names: the timeline's
// sources share one set of arguments, and each takes what it needs.
func argsFor(sql string, all map[string]any) pgx.StrictNamedArgs {
	out := pgx.StrictNamedArgs{}
	for _, m := range namedParam.FindAllStringSubmatch(sql, -1) {
		if v, ok := all[m[1]]; ok {
			out[m[1]] = v
		}
	}
	return out
}

// River job states the console groups by.
var (
	riverDeadStates    = []string{string(rivertype.JobStateDiscarded), string(rivertype.JobStateCancelled)}
	riverWaitingStates = []string{string(rivertype.JobStateAvailable), string(rivertype.JobStatePending),
		string(rivertype.JobStateRetryable), string(rivertype.JobStateRunning), string(rivertype.JobStateScheduled)}
)

// ConsoleConfig configures the console's read model.
type ConsoleConfig struct {
	// RepairKind is River's job kind of repair deliveries (relay.Kind).
	RepairKind string
	// NotifyKind is River's job kind of application notifications; the
	// overview counts its backlog and dead letters (none while no such job
	// exists).
	NotifyKind string
	// AccountsJob, on a platform (Connect), is the base sweep job of its
	// accounts: the overview's lag is then its worst account's, as status
	// and the metrics say (Monitor.Figures).
	AccountsJob string
	// Clock stamps audit entries and resolutions; default the system clock.
	Clock payrecon.Clock
	// Accounts is the account column (Connect): the findings list's
	// account filter reads it.
	Accounts AccountColumn
}

// ConsoleReader is the console's read model (console.ReadModel) and the
// store of its history samples (console.SampleStore). Reads run in
// read-only transactions: a page cannot write, whatever its SQL says.
type ConsoleReader struct {
	pool    *pgxpool.Pool
	monitor *Monitor
	cfg     ConsoleConfig
}

// NewConsoleReader returns the console's read model on pool.
func NewConsoleReader(pool *pgxpool.Pool, cfg ConsoleConfig) *ConsoleReader {
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	return &ConsoleReader{pool: pool, monitor: NewMonitor(pool), cfg: cfg}
}

// readOnly runs fn in a read-only transaction.
func (c *ConsoleReader) readOnly(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, c.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, fn)
}

// Overview implements console.ReadModel: the monitor's status figures, then
// the console's own in one read-only transaction.
func (c *ConsoleReader) Overview(ctx context.Context, now time.Time) (readmodel.Overview, error) {
	st, _, err := c.monitor.Figures(ctx, now, false, c.cfg.RepairKind, c.cfg.AccountsJob)
	if err != nil && !errors.Is(err, ErrAccountsFigures) {
		return readmodel.Overview{}, err
	}
	ov := readmodel.Overview{Now: now, Lag: st.Lag, LagKnown: st.LagKnown, Rows: st.Rows, RowsExact: st.RowsExact, NewRowsPerHour: st.NewRowsPerHour,
		OpenTotal: st.OpenFindingsTotal,
		Repairs:   readmodel.Queue{Backlog: st.OutboxBacklog, Oldest: st.OutboxOldest, DeadLetters: st.DeadLetters},
		Held:      st.HeldRepairs, HeldOldest: st.HeldOldest}
	for _, j := range st.Jobs {
		cj := readmodel.Job{Name: j.Job, Progress: j.Progress, CycleAge: j.CycleAge, SinceLastCycle: j.SinceLastCycle,
			LastCycleDuration: j.LastCycleDuration, Throughput: j.Throughput, Projection: j.Projection}
		if j.LeaseHolder != nil {
			cj.LeaseHolder = j.LeaseHolder.String()
		}
		ov.Jobs = append(ov.Jobs, cj)
	}
	err = c.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, consoleQuery("console_open_by_kind"))
		if err != nil {
			return fmt.Errorf("open findings by kind: %w", err)
		}
		var k readmodel.KindCount
		if _, err := pgx.ForEachRow(rows, []any{&k.Kind, &k.Verdict, &k.Count}, func() error {
			ov.Open = append(ov.Open, k)
			return nil
		}); err != nil {
			return fmt.Errorf("open findings by kind: %w", err)
		}
		rows, err = tx.Query(ctx, consoleQuery("console_money_at_stake"), pgx.StrictNamedArgs{
			"refunded_kinds": kindStrings(payrecon.StakeKinds(payrecon.StakeRefunded, payrecon.Kinds)),
			"disputed_kinds": kindStrings(payrecon.StakeKinds(payrecon.StakeDisputed, payrecon.Kinds))})
		if err != nil {
			return fmt.Errorf("money at stake: %w", err)
		}
		var kind payrecon.Kind
		var m readmodel.Money
		if _, err := pgx.ForEachRow(rows, []any{&kind, &m.Currency, &m.Amount, &m.Findings}, func() error {
			for i := range ov.Open {
				if ov.Open[i].Kind == kind {
					ov.Open[i].Money = append(ov.Open[i].Money, m)
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("money at stake: %w", err)
		}
		if c.cfg.NotifyKind != "" {
			var oldest *time.Time
			if err := tx.QueryRow(ctx, consoleQuery("console_queue"), pgx.StrictNamedArgs{"kind": c.cfg.NotifyKind,
				"waiting_states": riverWaitingStates, "dead_states": riverDeadStates}).
				Scan(&ov.Notifications.Backlog, &oldest, &ov.Notifications.DeadLetters); err != nil {
				return fmt.Errorf("notification backlog: %w", err)
			}
			if oldest != nil {
				ov.Notifications.Oldest = *oldest
			}
		}
		rows, err = tx.Query(ctx, consoleQuery("console_dead_letters"), pgx.StrictNamedArgs{"repair_kind": c.cfg.RepairKind,
			"dead_states": riverDeadStates, "limit": 20})
		if err != nil {
			return fmt.Errorf("dead letters: %w", err)
		}
		var d readmodel.DeadLetter
		if _, err := pgx.ForEachRow(rows, []any{&d.JobID, &d.OutboxID, &d.EventType, &d.FindingID, &d.State, &d.Attempts,
			&d.LastError, &d.At}, func() error {
			ov.DeadLetters = append(ov.DeadLetters, d)
			return nil
		}); err != nil {
			return fmt.Errorf("dead letters: %w", err)
		}
		return nil
	})
	if err != nil {
		return ov, fmt.Errorf("console overview: %w", err)
	}
	return ov, nil
}

// HeldRepairs implements console.ReadModel, in a read-only transaction.
func (c *ConsoleReader) HeldRepairs(ctx context.Context, limit int) ([]readmodel.HeldRepair, error) {
	var held []HeldRepair
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		var err error
		held, err = heldRepairs(ctx, tx, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]readmodel.HeldRepair, len(held))
	for i, h := range held {
		out[i] = readmodel.HeldRepair{OutboxID: h.OutboxID, Command: h.Command, HeldAt: h.HeldAt, FindingID: h.FindingID,
			Kind: h.Kind, OrderID: h.OrderID, IntentID: h.IntentID, LocalStatus: h.LocalStatus,
			ExternalStatus: h.ExternalStatus, StatusNow: h.Status, Reason: h.Reason, Job: h.Job}
		if h.PaymentID != nil {
			out[i].PaymentID = *h.PaymentID
		}
	}
	return out, nil
}

// History implements console.ReadModel.
func (c *ConsoleReader) History(ctx context.Context, since time.Time, bucket time.Duration) ([]readmodel.Sample, error) {
	var out []readmodel.Sample
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, consoleQuery("console_history"), pgx.StrictNamedArgs{"since": since, "bucket": bucket})
		if err != nil {
			return err
		}
		var (
			s   readmodel.Sample
			lag *float64
		)
		_, err = pgx.ForEachRow(rows, []any{&s.At, &lag, &s.OpenFindings}, func() error {
			x := s
			if lag != nil {
				x.Lag, x.LagKnown = seconds(*lag), true
			}
			out = append(out, x)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("console history since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	return out, nil
}

// findingArgs binds a readmodel.FindingQuery; NULL parameters do not filter.
func findingArgs(q readmodel.FindingQuery) pgx.StrictNamedArgs {
	state := q.State
	if state == "" {
		state = "open"
	}
	limit := q.Limit
	if limit <= 0 {
		limit = readmodel.PageSizeDefault
	}
	a := pgx.StrictNamedArgs{"state": state, "limit": limit + 1, "kinds": nil, "verdicts": nil,
		"detected_after": nil, "detected_before": nil, "after_at": nil, "after_id": nil, "account": q.Account}
	if len(q.Kinds) > 0 {
		ks := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			ks[i] = string(k)
		}
		a["kinds"] = ks
	}
	if len(q.Verdicts) > 0 {
		vs := make([]string, len(q.Verdicts))
		for i, v := range q.Verdicts {
			vs[i] = string(v)
		}
		a["verdicts"] = vs
	}
	if !q.DetectedAfter.IsZero() {
		a["detected_after"] = q.DetectedAfter
	}
	if !q.DetectedBefore.IsZero() {
		a["detected_before"] = q.DetectedBefore
	}
	if q.After != nil {
		a["after_at"], a["after_id"] = q.After.DetectedAt, q.After.ID
	}
	return a
}

func collectFindings(rows pgx.Rows) ([]payrecon.Finding, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (payrecon.Finding, error) { return scanFinding(r) })
}

// Findings implements console.ReadModel: one keyset page.
func (c *ConsoleReader) Findings(ctx context.Context, q readmodel.FindingQuery) ([]payrecon.Finding, bool, error) {
	args := findingArgs(q)
	limit := args["limit"].(int) - 1
	var out []payrecon.Finding
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, accountSQL(consoleQuery("console_findings"), c.cfg.Accounts), args)
		if err != nil {
			return err
		}
		out, err = collectFindings(rows)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("console findings: %w", err)
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// timelineSource is one source of a finding's timeline: a query run with
// the named arguments finding_id, payment_id, intent_id, repair_kind,
// notify_kind and dead_states, returning (at, title, detail).
type timelineSource struct {
	source string
	query  string
}

// timelineSources are the finding page's timeline, one query each. A new
// source (payment transitions, notifications) is one entry here, one .sql
// file and one label in the console.
var timelineSources = []timelineSource{
	{"finding", "console_timeline_finding"},
	{"sweep", "console_timeline_sweeps"},
	{"webhook", "console_timeline_webhooks"},
	{"repair", "console_timeline_repairs"},
	{"operator", "console_timeline_operator"},
	{"transition", "console_timeline_transitions"},
}

// Finding implements console.ReadModel: the finding, its payment, its
// repair and its timeline, in one read-only transaction.
func (c *ConsoleReader) Finding(ctx context.Context, id int64) (readmodel.FindingDetail, error) {
	var d readmodel.FindingDetail
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		var err error
		d.Finding, err = scanFinding(tx.QueryRow(ctx, consoleQuery("console_finding"), pgx.StrictNamedArgs{"finding_id": id}), &d.Stripe)
		if errors.Is(err, pgx.ErrNoRows) {
			return payrecon.ErrNotFound
		}
		if err != nil {
			return err
		}
		f := d.Finding
		if f.PaymentID != nil {
			p, err := scanPayment(tx.QueryRow(ctx, consoleQuery("console_payment"), pgx.StrictNamedArgs{"payment_id": *f.PaymentID}))
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("payment: %w", err)
			}
			if err == nil {
				d.Payment = &p
			}
		}
		var r readmodel.Repair
		err = tx.QueryRow(ctx, consoleQuery("console_repair"), pgx.StrictNamedArgs{"finding_id": id, "repair_kind": c.cfg.RepairKind}).
			Scan(&r.OutboxID, &r.EventType, &r.CreatedAt, &r.ProcessedAt, &r.Outcome, &r.LastError, &r.JobID, &r.JobState,
				&r.Attempt, &r.MaxAttempts)
		switch {
		case err == nil:
			d.Repair = &r
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("repair command: %w", err)
		}
		args := map[string]any{"finding_id": id, "payment_id": f.PaymentID, "intent_id": f.IntentID,
			"repair_kind": c.cfg.RepairKind, "notify_kind": c.cfg.NotifyKind, "dead_states": riverDeadStates}
		batch := &pgx.Batch{}
		for _, src := range timelineSources {
			q := consoleQuery(src.query)
			batch.Queue(q, argsFor(q, args))
		}
		br := tx.SendBatch(ctx, batch)
		for _, src := range timelineSources {
			rows, err := br.Query()
			if err != nil {
				br.Close()
				return fmt.Errorf("timeline %s: %w", src.source, err)
			}
			var (
				at            *time.Time
				title, detail *string
			)
			if _, err := pgx.ForEachRow(rows, []any{&at, &title, &detail}, func() error {
				if at != nil {
					d.Timeline = append(d.Timeline, readmodel.Event{At: *at, Source: src.source, Title: orZero(title), Detail: orZero(detail)})
				}
				return nil
			}); err != nil {
				br.Close()
				return fmt.Errorf("timeline %s: %w", src.source, err)
			}
		}
		return br.Close()
	})
	if errors.Is(err, payrecon.ErrNotFound) {
		return d, fmt.Errorf("finding %d: %w", id, payrecon.ErrNotFound)
	}
	if err != nil {
		return d, fmt.Errorf("console finding %d: %w", id, err)
	}
	sort.SliceStable(d.Timeline, func(i, j int) bool { return d.Timeline[i].At.Before(d.Timeline[j].At) })
	return d, nil
}

func scanPayment(row pgx.Row) (payrecon.Payment, error) {
	var p payrecon.Payment
	err := row.Scan(&p.ID, &p.OrderID, &p.IntentID, &p.Status, &p.Version, &p.CreatedAt, &p.UpdatedAt, &p.ObservedStatus, &p.LastReconciledAt)
	return p, err
}

// Lookup implements console.ReadModel: payments by id, PaymentIntent id or
// order id, and PaymentIntents with findings but no local row.
func (c *ConsoleReader) Lookup(ctx context.Context, q string) ([]readmodel.PaymentMatch, error) {
	var id any
	if n, err := strconv.ParseInt(q, 10, 64); err == nil && n > 0 {
		id = n
	}
	var out []readmodel.PaymentMatch
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, consoleQuery("console_lookup"), pgx.StrictNamedArgs{"id": id, "q": q})
		if err != nil {
			return err
		}
		ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (payrecon.Payment, error) { return scanPayment(r) })
		if err != nil {
			return err
		}
		ids := make([]int64, len(ps))
		byID := map[int64]int{}
		for i, p := range ps {
			ids[i] = p.ID
			byID[p.ID] = i
			out = append(out, readmodel.PaymentMatch{Payment: &ps[i], IntentID: p.IntentID})
		}
		rows, err = tx.Query(ctx, consoleQuery("console_lookup_findings"), pgx.StrictNamedArgs{"payment_ids": ids, "q": q})
		if err != nil {
			return err
		}
		fs, err := collectFindings(rows)
		if err != nil {
			return err
		}
		orphan := -1
		for _, f := range fs {
			if f.PaymentID != nil {
				if i, ok := byID[*f.PaymentID]; ok {
					out[i].Findings = append(out[i].Findings, f)
				}
				continue
			}
			if orphan < 0 {
				out = append(out, readmodel.PaymentMatch{IntentID: f.IntentID})
				orphan = len(out) - 1
			}
			out[orphan].Findings = append(out[orphan].Findings, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console lookup: %w", err)
	}
	return out, nil
}

// Audit implements console.ReadModel.
func (c *ConsoleReader) Audit(ctx context.Context, limit int) ([]readmodel.AuditEntry, error) {
	var out []readmodel.AuditEntry
	err := c.readOnly(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, consoleQuery("console_audit_list"), pgx.StrictNamedArgs{"limit": limit})
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (readmodel.AuditEntry, error) {
			var e readmodel.AuditEntry
			err := r.Scan(&e.ID, &e.At, &e.Operator, &e.Action, &e.FindingID, &e.JobID, &e.Note, &e.Outcome)
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("console audit log: %w", err)
	}
	return out, nil
}

// RecordSample implements console.SampleStore.
func (c *ConsoleReader) RecordSample(ctx context.Context, minute, now time.Time) (bool, error) {
	l, ok, err := c.monitor.Lag(ctx, now)
	if err != nil {
		return false, fmt.Errorf("record console sample: %w", err)
	}
	var lag *float64
	if ok {
		secs := l.Seconds()
		lag = &secs
	}
	tag, err := c.pool.Exec(ctx, consoleQuery("console_record_sample"), pgx.StrictNamedArgs{"minute": minute,
		"lag_seconds": lag, "repair_kind": c.cfg.RepairKind, "dead_states": riverDeadStates})
	if err != nil {
		return false, fmt.Errorf("record console sample: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
