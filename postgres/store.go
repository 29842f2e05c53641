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

// EnqueueFunc delivers repair commands: it is called inside the batch's
// transaction with the outbox ids the batch queued, so that the delivery
// (a River job) commits or rolls back with the finding and the outbox row.
type EnqueueFunc func(ctx context.Context, tx pgx.Tx, outboxIDs []int64) error

// Store implements payrecon.SweepStore on PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	// EnqueueFunc, when set, is called in every batch transaction that
	// queued repair commands (RepairMode apply).
	EnqueueFunc EnqueueFunc
	// HoldFunc, under RepairMode review, is called instead of EnqueueFunc:
	// it records the commands as held for approval (relay.Relay.HoldFunc).
	// Review without it fails the batch rather than queue commands unheld.
	HoldFunc EnqueueFunc
	// RepairMode says what becomes of the repair commands of new repairable
	// findings: queued and applied (apply, the zero value), queued and held
	// (review), or not queued at all (off: the finding is recorded without
	// a command).
	RepairMode payrecon.RepairMode
	// window, when positive, makes ReadBatch read only the rows created
	// within it (see Recent).
	window time.Duration
	// money, when set, names the local money columns the read queries
	// (reads, by name) return with each row (WithMoneyColumns).
	money *MoneyColumns
	reads map[string]string
	// accounts, when set, makes the store read only the rows of account
	// (ForAccount).
	accounts *AccountColumn
	account  string
	// sessions, when set, names the Checkout Session column the read
	// queries return with each row (WithSessionColumn).
	sessions *SessionColumn
}

var _ payrecon.SweepStore = (*Store)(nil)

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Recent returns a store on the same pool (and with the same EnqueueFunc)
// for a recent-window sweep job (run --recent): its ReadBatch reads only the
// rows created within window before the batch's now, in creation order
// (queries/read_recent_batch.sql, an index range on payments_created_at),
// from the row its cursor names. Everything else (the compare-and-set, the
// commit of results, findings, healing and repairs, the wrap, rechecks) is
// the full sweep's: the same RunBatch on another row source. Give it a job
// name of its own (the full job's name plus payrecon.RecentJobSuffix), so
// that its cursor, lease and rechecks are its own.
func (s *Store) Recent(window time.Duration) *Store {
	r := *s
	r.window = window
	return &r
}

// Pool returns the store's connection pool.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// ReadBatch implements payrecon.SweepStore. The cursor and its rows come
// from one statement (one snapshot); no transaction stays open afterwards.
func (s *Store) ReadBatch(ctx context.Context, job string, limit, recheckLimit int, now time.Time) (payrecon.Cursor, []payrecon.PaymentRow, []payrecon.PaymentRow, error) {
	cur := payrecon.Cursor{Job: job}
	b := &pgx.Batch{}
	// The database's clock before any Stripe request for these rows.
	b.Queue(queries.Get("database_now")).QueryRow(func(row pgx.Row) error { return row.Scan(&cur.ReadAt) })
	b.Queue(queries.Get("ensure_cursor"), pgx.StrictNamedArgs{"job": job, "now": now})
	var rows, rechecks []payrecon.PaymentRow
	found := false
	read, args := s.read("read_batch"), s.scoped(pgx.StrictNamedArgs{"job": job, "limit": limit})
	if s.window > 0 {
		read, args["since"] = s.read("read_recent_batch"), now.Add(-s.window)
	}
	b.Queue(read, args).Query(func(rs pgx.Rows) error {
		for rs.Next() {
			var (
				completed *time.Time
				id        *int64
				intent    *string
				status    *string
				version   *int64
				created   *time.Time
				updated   *time.Time
				amount    *int64
				currency  *string
				session   *string
			)
			if err := rs.Scan(&cur.LastID, &cur.CycleStartedAt, &completed, &id, &intent, &status, &version, &created, &updated, &amount, &currency, &session); err != nil {
				return err
			}
			found = true
			if completed != nil {
				cur.LastCycleCompletedAt = *completed
			}
			if id == nil {
				continue
			}
			// Any column but the id may be NULL in an application's table
			// (or view): a NULL intent id becomes "" (an invalid_local_row
			// finding), never a nil dereference.
			rows = append(rows, payrecon.PaymentRow{ID: *id, IntentID: orZero(intent), Status: payrecon.LocalStatus(orZero(status)),
				Version: orZero(version), CreatedAt: orZero(created), UpdatedAt: orZero(updated), Money: s.localMoney(amount, currency),
				SessionID: orZero(session)})
		}
		return rs.Err()
	})
	if recheckLimit > 0 {
		b.Queue(s.read("read_rechecks"), s.scoped(pgx.StrictNamedArgs{"job": job, "now": now, "limit": recheckLimit})).Query(func(rs pgx.Rows) error {
			for rs.Next() {
				r := payrecon.PaymentRow{FromRecheck: true}
				var (
					intent, status   *string
					version          *int64
					created, updated *time.Time
					amount           *int64
					currency         *string
				)
				if err := rs.Scan(&r.ID, &intent, &status, &version, &created, &updated, &r.Rechecks, &amount, &currency, &r.SessionID); err != nil {
					return err
				}
				r.IntentID, r.Status, r.Version = orZero(intent), payrecon.LocalStatus(orZero(status)), orZero(version)
				r.CreatedAt, r.UpdatedAt = orZero(created), orZero(updated)
				r.Money = s.localMoney(amount, currency)
				rechecks = append(rechecks, r)
			}
			return rs.Err()
		})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return cur, nil, nil, fmt.Errorf("read batch for job %q: %w", job, err)
	}
	if !found {
		return cur, nil, nil, fmt.Errorf("read batch for job %q: cursor row missing", job)
	}
	return cur, rows, rechecks, nil
}

// CommitBatch implements payrecon.SweepStore: the cursor compare-and-set
// first (so a concurrent run is detected before anything else is written),
// then the rows' results, findings, repair commands and rechecks in one
// statement, then the repair delivery hook, all in one transaction.
func (s *Store) CommitBatch(ctx context.Context, c payrecon.BatchCommit) (payrecon.CommitResult, error) {
	res := payrecon.CommitResult{Opened: map[payrecon.Kind]int{}, Resolved: map[payrecon.Kind]int{}}
	if s.RepairMode.Holds() && s.HoldFunc == nil {
		return res, fmt.Errorf("commit batch of job %q: repair mode review needs a HoldFunc", c.Job)
	}
	checks, intents, err := checkRows(c.Checks, c.Now, c.Advance, s.RepairMode.Queues())
	if err != nil {
		return res, fmt.Errorf("commit batch of job %q: %w", c.Job, err)
	}
	stuckStatuses, stuckLimits, inflight := []string{}, []time.Duration{}, []string{}
	for _, st := range payrecon.StuckStatuses {
		inflight = append(inflight, string(st))
		if d, ok := c.StuckAfter[st]; ok {
			stuckStatuses, stuckLimits = append(stuckStatuses, string(st)), append(stuckLimits, d)
		}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkFence(ctx, tx, c.Job, c.Fence); err != nil {
			return err
		}
		if err := checkJobFence(ctx, tx, c.Job); err != nil {
			return err
		}
		if c.Advance {
			tag, err := tx.Exec(ctx, queries.Get("commit_cursor"), pgx.StrictNamedArgs{
				"job": c.Job, "from": c.From, "to": c.To, "rows": len(c.Checks), "busy_seconds": c.Busy.Seconds(), "now": c.Now,
			})
			if err != nil {
				return fmt.Errorf("advance cursor %q: %w", c.Job, err)
			}
			if tag.RowsAffected() != 1 {
				return fmt.Errorf("advance cursor %q from %d: %w", c.Job, c.From, payrecon.ErrConcurrentRun)
			}
		}
		b := &pgx.Batch{}
		b.Queue(s.read("commit_checks"), s.scoped(pgx.StrictNamedArgs{
			"checks": checks, "job": c.Job, "now": c.Now, "grace": c.Grace,
			"not_found": string(payrecon.NotFound), "changed": payrecon.RecheckChanged,
			"healed": string(payrecon.ResolvedHealed), "superseded": string(payrecon.ResolvedSuperseded),
			"side_kinds": kindStrings(payrecon.SideKinds()), "needs_review": string(payrecon.NeedsReview),
			"stuck_kind": string(payrecon.KindStuckInFlight), "stuck_statuses": stuckStatuses, "stuck_limits": stuckLimits,
			"inflight_statuses": inflight, "refresh_seconds": max(c.VerifiedRefresh, 0).Seconds(),
			"range_account": s.rangeAccount(),
		})).QueryRow(func(row pgx.Row) error {
			var opened, resolved []string
			if err := row.Scan(&res.Verified, &res.Stale, &opened, &resolved, &res.Commands); err != nil {
				return err
			}
			countKinds(res.Opened, opened)
			countKinds(res.Resolved, resolved)
			return nil
		})
		b.Queue(queries.Get("resolve_orphans"), pgx.StrictNamedArgs{
			"intent_ids": intents, "now": c.Now, "job": c.Job,
			"kind": string(payrecon.KindMissingLocally), "resolution": string(payrecon.ResolvedLocalRowAppeared),
		}).Query(func(rows pgx.Rows) error {
			kinds, err := pgx.CollectRows(rows, pgx.RowTo[string])
			countKinds(res.Resolved, kinds)
			return err
		})
		if rng, ok := s.verifiedRange(c); ok {
			b.Queue(queries.Get("record_verified_range"), pgx.StrictNamedArgs{
				"job": c.Job, "lo": rng.lo, "hi": rng.hi, "read_min": rng.readMin, "read_max": rng.readMax,
				"row_count": rng.rows, "prune_before": rng.pruneBefore, "range_account": s.rangeAccount(),
			})
		}
		if ids, sessions, intents := sessionIntents(c.Checks); len(ids) > 0 {
			b.Queue(queries.Get("record_session_intents"), pgx.StrictNamedArgs{
				"payment_ids": ids, "session_ids": sessions, "intent_ids": intents, "now": c.Now,
			})
		}
		if invalid := invalidRows(c.Checks); len(invalid) > 0 {
			b.Queue(queries.Get("open_invalid_rows"), pgx.StrictNamedArgs{
				"ids": invalid, "kind": string(payrecon.KindInvalidLocalRow), "verdict": string(payrecon.NeedsReview),
				"reason": payrecon.InvalidLocalRow().Reason, "job": c.Job, "now": c.Now,
			}).Query(func(rows pgx.Rows) error {
				kinds, err := pgx.CollectRows(rows, pgx.RowTo[string])
				countKinds(res.Opened, kinds)
				return err
			})
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("write batch results for job %q: %w", c.Job, err)
		}
		if len(c.Orphans) > 0 {
			oid, ost := make([]string, len(c.Orphans)), make([]string, len(c.Orphans))
			for i, o := range c.Orphans {
				oid[i], ost[i] = o.IntentID, string(o.Status)
			}
			ids, err := openMissingLocally(ctx, tx, oid, ost, "a PaymentIntent exists in Stripe with no local payments row", c.Job, c.Now)
			if err != nil {
				return err
			}
			res.Opened[payrecon.KindMissingLocally] += len(ids)
		}
		switch {
		case len(res.Commands) == 0:
		case s.RepairMode.Holds():
			if err := s.HoldFunc(ctx, tx, res.Commands); err != nil {
				return fmt.Errorf("hold %d repair commands for review: %w", len(res.Commands), err)
			}
		case s.EnqueueFunc != nil:
			if err := s.EnqueueFunc(ctx, tx, res.Commands); err != nil {
				return fmt.Errorf("enqueue %d repair commands: %w", len(res.Commands), err)
			}
		}
		return nil
	})
	if err != nil {
		return payrecon.CommitResult{}, err
	}
	return res, nil
}

// windowRangeKeep is how long a recent-window job's verified ranges are
// kept: they are not replaced by a cursor that walks the ids, and serve only
// to keep another job's older answers from being applied, which are never
// this old.
const windowRangeKeep = time.Hour

// rangeAccount is the account the store's verified ranges are recorded
// under and compared with: its account when it reads one account's rows,
// NULL otherwise.
func (s *Store) rangeAccount() *string {
	if s.accounts == nil {
		return nil
	}
	a := s.account
	return &a
}

// verifiedRange is what record_verified_range.sql records for a batch.
type verifiedRange struct {
	lo, hi           int64
	readMin, readMax *time.Time
	rows             int
	pruneBefore      *time.Time
}

// verifiedRange describes the batch's range of ids and the times of its
// answers (over every row Stripe was read for: a superset of those the
// commit verifies, so read_min is never later, nor read_max earlier, than
// theirs). A full sweep's range is its cursor range (From, To]; a
// recent-window batch, read in creation order, covers the span of its
// rows' ids. Batches that do not move the cursor (rechecks) record none:
// their rows are always written.
func (s *Store) verifiedRange(c payrecon.BatchCommit) (verifiedRange, bool) {
	if !c.Advance {
		return verifiedRange{}, false
	}
	r := verifiedRange{lo: c.From, hi: c.To}
	if s.window > 0 {
		first := true
		for _, ch := range c.Checks {
			if ch.Row.FromRecheck {
				continue
			}
			if first || ch.Row.ID-1 < r.lo {
				r.lo = ch.Row.ID - 1
			}
			if first || ch.Row.ID > r.hi {
				r.hi = ch.Row.ID
			}
			first = false
		}
		before := c.Now.Add(-windowRangeKeep)
		r.pruneBefore = &before
	}
	for _, ch := range c.Checks {
		if !ch.Read() || ch.Row.FromRecheck {
			continue
		}
		t := ch.ReadAt
		if r.readMin == nil || t.Before(*r.readMin) {
			r.readMin = &t
		}
		if r.readMax == nil || t.After(*r.readMax) {
			r.readMax = &t
		}
		r.rows++
	}
	return r, r.hi > r.lo
}

// checkRow is one element of commit_checks.sql's @checks JSON array.
type checkRow struct {
	PaymentID int64 `json:"payment_id"`
	// Always writes the row's observed status and last_reconciled_at
	// whatever changed: a recheck, or a batch that does not move the cursor
	// (and so records no range).
	Always        bool       `json:"always"`
	Version       int64      `json:"version"`
	IntentID      string     `json:"intent_id"`
	SessionID     string     `json:"session_id,omitempty"`
	LocalStatus   string     `json:"local_status"`
	UpdatedAt     *time.Time `json:"updated_at"`
	ReadAt        *time.Time `json:"read_at"`
	Observed      *string    `json:"observed"`
	Verdict       string     `json:"verdict"`
	Kind          *string    `json:"kind,omitempty"`
	Command       *string    `json:"command,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	Heals         bool       `json:"heals"`
	RecheckAt     *time.Time `json:"recheck_at,omitempty"`
	RecheckReason *string    `json:"recheck_reason,omitempty"`
	Err           *string    `json:"err,omitempty"`
	// Details is what Stripe returned (payrecon.FindingDetails), kept with the
	// findings the row opens. Fields left out are NULL to the statement
	// (booleans are never left out: a NULL would poison its conditions).
	Details *payrecon.FindingDetails `json:"details,omitempty"`
	Drifts  []payrecon.Drift         `json:"drifts,omitempty"`
	Judged  []payrecon.Kind          `json:"judged,omitempty"`
}

// detailsOf builds a finding's details from what Stripe returned for the
// row; nil when nothing was read.
func detailsOf(in *payrecon.Intent, money *payrecon.LocalMoney, now time.Time) *payrecon.FindingDetails {
	if in == nil {
		return nil
	}
	d := &payrecon.FindingDetails{Status: string(in.Status), Amount: in.Amount, AmountReceived: in.AmountReceived, Currency: in.Currency}
	if c := in.LatestCharge; c.Expanded() {
		d.Charge = &payrecon.ChargeDetails{ID: c.ID, AmountCaptured: c.AmountCaptured, AmountRefunded: c.AmountRefunded,
			Refunded: c.Refunded, Disputed: c.Disputed, Currency: c.Currency, Created: c.Created, ObservedAt: now}
	}
	if money != nil {
		d.LocalAmount, d.LocalCurrency = money.Amount, money.Currency
	}
	return d
}

// sessionDetails adds what a session row's Checkout Session showed to a
// finding's details: the session, its status, and the PaymentIntent it
// names that the row does not record.
func sessionDetails(d *payrecon.FindingDetails, s *payrecon.Session) *payrecon.FindingDetails {
	if d == nil {
		d = &payrecon.FindingDetails{}
	}
	d.CheckoutSession = s.ID
	d.SessionStatus = string(s.Status)
	d.SessionPaymentStatus = s.PaymentStatus
	d.SessionIntent = s.PaymentIntentID
	return d
}

func kindStrings(kinds []payrecon.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// checkRows turns a batch's checks into commit_checks.sql's rows, and lists
// their PaymentIntent ids (resolve_orphans.sql). A check that read Stripe
// without saying when (Check.ReadAt) is refused: its answer could be older
// than what it would overwrite. Without queue (repair mode off) no row
// carries a command: repairable findings are recorded without one, and
// nothing is queued.
func checkRows(checks []payrecon.Check, now time.Time, advance, queue bool) ([]checkRow, []string, error) {
	rows, intents := make([]checkRow, len(checks)), make([]string, len(checks))
	for i, ch := range checks {
		if ch.Read() && ch.ReadAt.IsZero() {
			return nil, nil, fmt.Errorf("payment %d: Stripe was read but the check carries no read time", ch.Row.ID)
		}
		rows[i] = checkRow{
			PaymentID: ch.Row.ID, Always: ch.Row.FromRecheck || !advance, Version: ch.Row.Version, IntentID: ch.Row.IntentID, SessionID: ch.Row.SessionID,
			LocalStatus: string(ch.Row.Status), Observed: optional(string(ch.Observed)),
			Verdict: string(ch.Decision.Verdict), Kind: optional(string(ch.Decision.Kind)),
			Command: optional(string(ch.Decision.Command)),
			Heals:   ch.Decision.Verdict == payrecon.InSync, Err: optional(ch.Err),
			Drifts: ch.Drifts, Judged: ch.Judged,
		}
		// The reason and what Stripe returned go only with a check that
		// may open a finding (its status kind, a drift, or a stuck
		// in-flight status): most rows are in sync, and the statement's
		// JSON is most of a batch's cost to build and to parse.
		if ch.Decision.Kind != "" {
			rows[i].Reason = ch.Decision.Reason
		}
		if ch.Decision.Kind != "" || len(ch.Drifts) > 0 || slices.Contains(payrecon.StuckStatuses, ch.Observed) {
			rows[i].Details = detailsOf(ch.Intent, ch.Row.Money, now)
			if ch.Session != nil {
				rows[i].Details = sessionDetails(rows[i].Details, ch.Session)
			}
		}
		if !queue {
			rows[i].Command = nil
		}
		if !ch.RecheckAt.IsZero() {
			t, reason := ch.RecheckAt, ch.RecheckReason
			rows[i].RecheckAt, rows[i].RecheckReason = &t, &reason
		}
		if !ch.Row.UpdatedAt.IsZero() {
			u := ch.Row.UpdatedAt
			rows[i].UpdatedAt = &u
		}
		if !ch.ReadAt.IsZero() {
			r := ch.ReadAt
			rows[i].ReadAt = &r
		}
		intents[i] = ch.Row.IntentID
		if ch.Row.IntentID == "" && ch.Session != nil && ch.Session.PaymentIntentID != "" {
			// A session row now accounts for its session's PaymentIntent:
			// a missing_locally finding about that intent is closed.
			intents[i] = ch.Session.PaymentIntentID
		}
	}
	return rows, intents, nil
}

// DatabaseNow implements payrecon.SweepStore.
func (s *Store) DatabaseNow(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.pool.QueryRow(ctx, queries.Get("database_now")).Scan(&t); err != nil {
		return t, fmt.Errorf("read the database's clock: %w", err)
	}
	return t, nil
}

// Wrap implements payrecon.SweepStore: the lease's fence and the cursor's
// compare-and-set in one transaction.
func (s *Store) Wrap(ctx context.Context, job string, from, fence int64, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := checkFence(ctx, tx, job, fence); err != nil {
			return err
		}
		if err := checkJobFence(ctx, tx, job); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, queries.Get("wrap_cursor"), pgx.StrictNamedArgs{"job": job, "from": from, "now": now})
		if err != nil {
			return fmt.Errorf("wrap cursor %q: %w", job, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("wrap cursor %q from %d: %w", job, from, payrecon.ErrConcurrentRun)
		}
		if s.window == 0 {
			if _, err := tx.Exec(ctx, queries.Get("wrap_verified_ranges"), pgx.StrictNamedArgs{"job": job, "from": from}); err != nil {
				return fmt.Errorf("wrap verified ranges of %q: %w", job, err)
			}
		}
		return nil
	})
}

// CountCreatedBetween implements payrecon.SweepStore: a bounded count on
// payments_created_at, so a dense window costs no more than limit index
// entries.
func (s *Store) CountCreatedBetween(ctx context.Context, lo, hi time.Time, limit int64) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, s.read("count_created_between"), s.scoped(pgx.StrictNamedArgs{"lo": lo, "hi": hi, "limit": limit})).Scan(&n); err != nil {
		return 0, fmt.Errorf("count payments created between %s and %s: %w", lo.Format(time.RFC3339), hi.Format(time.RFC3339), err)
	}
	return n, nil
}

// PendingRechecks implements payrecon.SweepStore.
func (s *Store) PendingRechecks(ctx context.Context, job string) (map[string]int, error) {
	return pendingRechecks(ctx, s.pool, job)
}

func pendingRechecks(ctx context.Context, pool *pgxpool.Pool, job string) (map[string]int, error) {
	rows, err := pool.Query(ctx, queries.Get("pending_rechecks"), pgx.StrictNamedArgs{"job": job})
	if err != nil {
		return nil, fmt.Errorf("count rechecks of job %q: %w", job, err)
	}
	out := map[string]int{}
	var (
		reason string
		n      int
	)
	if _, err := pgx.ForEachRow(rows, []any{&reason, &n}, func() error {
		out[reason] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count rechecks of job %q: %w", job, err)
	}
	return out, nil
}

// NextRecheck implements payrecon.SweepStore.
func (s *Store) NextRecheck(ctx context.Context, job, reason string) (time.Time, error) {
	var due *time.Time
	err := s.pool.QueryRow(ctx, queries.Get("next_recheck"), pgx.StrictNamedArgs{"job": job, "reason": reason}).Scan(&due)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("next recheck of job %q: %w", job, err)
	}
	if due == nil {
		return time.Time{}, nil
	}
	return *due, nil
}

// sessionIntents lists the session rows whose Checkout Session named a
// PaymentIntent, with the session and the intent (record_session_intents.sql).
func sessionIntents(checks []payrecon.Check) (ids []int64, sessions, intents []string) {
	for _, ch := range checks {
		if s := ch.Session; s != nil && s.PaymentIntentID != "" && ch.Row.IntentID == "" {
			ids, sessions, intents = append(ids, ch.Row.ID), append(sessions, s.ID), append(intents, s.PaymentIntentID)
		}
	}
	return ids, sessions, intents
}

// invalidRows lists the payments of the checks decided invalid_local_row
// (open_invalid_rows.sql).
func invalidRows(checks []payrecon.Check) []int64 {
	var ids []int64
	for _, ch := range checks {
		if ch.Decision.Kind == payrecon.KindInvalidLocalRow {
			ids = append(ids, ch.Row.ID)
		}
	}
	return ids
}

// orZero is *p, or the zero value for nil.
func orZero[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func countKinds(m map[payrecon.Kind]int, kinds []string) {
	for _, k := range kinds {
		m[payrecon.Kind(k)]++
	}
}

// optionalID is id, or NULL for zero.
func optionalID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
