package payrecon

import (
	"context"
	"time"
)

// PaymentRow is a payments row as the sweep reads it.
type PaymentRow struct {
	ID        int64       `json:"id"`
	IntentID  string      `json:"stripe_payment_intent_id"`
	Status    LocalStatus `json:"status"`
	Version   int64       `json:"version"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
	// Rechecks counts earlier attempts when the row came from the recheck
	// queue rather than the cursor; zero otherwise.
	Rechecks int `json:"rechecks,omitempty"`
	// FromRecheck is true when the row came from the recheck queue.
	FromRecheck bool `json:"from_recheck,omitempty"`
	// Money is the row's amount and currency, from the columns payments
	// has (--amount-column, --currency-column); nil when they were not
	// read, so neither is judged.
	Money *LocalMoney `json:"money,omitempty"`
	// Account is the connected account the row records (--account-column;
	// "" for the platform's own, or when there is no such column). Only a
	// one-off read of one row sets it (postgres.Store.SweepRow): a batch's
	// rows are all of its store's account.
	Account string `json:"account,omitempty"`
	// SessionID is the Checkout Session the row records (--session-column;
	// "" when it records none, or there is no such column). A row with a
	// session and no IntentID is checked through its session.
	SessionID string `json:"stripe_checkout_session_id,omitempty"`
}

// Cursor is the position of a sweep job.
type Cursor struct {
	Job                  string    `json:"job"`
	LastID               int64     `json:"last_id"`
	CycleStartedAt       time.Time `json:"cycle_started_at"`
	LastCycleCompletedAt time.Time `json:"last_cycle_completed_at"` // zero: never
	// ReadAt is the database's clock when the batch was read: earlier than
	// every Stripe request made for its rows (Check.ReadAt).
	ReadAt time.Time `json:"-"`
}

// Check is the outcome of checking one row against Stripe.
type Check struct {
	Row      PaymentRow
	Decision Decision
	// Observed is the status Stripe reported (NotFound for a 404); empty
	// when Stripe was not read (in the grace window, or unavailable).
	Observed StripeStatus
	// RecheckAt, when set, queues the row for an early recheck, for
	// RecheckReason (RecheckGrace or RecheckUnverifiable).
	RecheckAt     time.Time
	RecheckReason string
	// Err says why the row is unverifiable.
	Err string
	// ReadAt is a time, on the database's clock, no later than the moment
	// Stripe was asked for this answer (the batch's read, or for a listed
	// intent the read of the batch that listed it). The commit resolves
	// only findings recorded before it, and never replaces a stored answer
	// read after it: a stale answer cannot close a fresh finding. Required
	// when Observed is set.
	ReadAt time.Time
	// Intent is what Stripe returned for the row (nil when it was not read
	// or not found): kept with the row's findings as their details.
	Intent *Intent
	// Session is the Checkout Session read for a session row (nil for an
	// intent row): named in the row's findings' details, with the
	// PaymentIntent it has that the row does not record.
	Session *Session
	// Drifts are the findings recorded beside the status verdict (money
	// drifts, stuck_in_flight), each its own finding. Judged lists the
	// kinds that were judged for the row: an open finding of a judged kind
	// that is not among Drifts has healed; findings of kinds not judged
	// (ignored, their column absent, the charge not read) are left alone.
	Drifts []Drift
	Judged []Kind
}

// Read reports whether Stripe's answer about the row was actually read.
func (c Check) Read() bool { return c.Observed != "" }

// Orphan is a PaymentIntent seen in Stripe that may have no local row.
type Orphan struct {
	IntentID string
	Status   StripeStatus
	Created  time.Time
}

// BatchCommit is everything one batch writes, in one transaction.
type BatchCommit struct {
	Job string
	// From and To move the cursor with a compare-and-set. When Advance is
	// false (a batch made only of rechecks) the cursor is left alone.
	From, To int64
	Advance  bool
	Checks   []Check
	Orphans  []Orphan
	// Grace delays the recheck of rows that changed while being checked.
	Grace time.Duration
	Now   time.Time
	// Busy is the time the batch took, for the measured throughput.
	Busy time.Duration
	// Fence is the epoch of the job's lease the batch ran under (0: no
	// lease). The commit checks it in its transaction and writes nothing,
	// failing with ErrLeaseLost, when the lease has moved on.
	Fence int64
	// VerifiedRefresh: a verified row whose observed status did not change
	// (and that has no findings to open or close, and did not come from the
	// recheck queue) gets its observed_external_status and
	// last_reconciled_at written at most once per VerifiedRefresh, at a
	// phase of its own; its verification is recorded with the batch's range
	// instead (--verified-refresh). Zero writes every verified row, as the
	// first two waves did.
	VerifiedRefresh time.Duration
	// StuckAfter, when it has limits, makes the commit keep when each row
	// was first observed in its in-flight status and record
	// stuck_in_flight past the limit (--stuck-after).
	StuckAfter StuckAfter
}

// CommitResult says what a committed batch wrote.
type CommitResult struct {
	// Verified counts rows whose last_reconciled_at advanced.
	Verified int
	// Stale lists rows read from Stripe whose local row changed during the
	// check: not verified, no finding, rechecked after the grace window.
	Stale []int64
	// Opened and Resolved count findings opened, and closed because the row
	// was seen in sync or with a different drift, by kind.
	Opened   map[Kind]int
	Resolved map[Kind]int
	// Commands lists the outbox ids of the repair commands queued.
	Commands []int64
}

// SweepStore is the storage the sweep needs. The postgres package implements
// it.
type SweepStore interface {
	// ReadBatch ensures the job's cursor exists and reads, in one snapshot,
	// the cursor and up to limit rows after it, plus up to recheckLimit
	// rows whose recheck is due at now.
	ReadBatch(ctx context.Context, job string, limit, recheckLimit int, now time.Time) (Cursor, []PaymentRow, []PaymentRow, error)
	// CommitBatch writes results, findings, repair commands, rechecks and
	// the cursor advance in one transaction; ErrConcurrentRun when the
	// cursor moved since ReadBatch, in which case nothing is written.
	CommitBatch(ctx context.Context, b BatchCommit) (CommitResult, error)
	// Wrap moves the cursor from `from` back to 0 and completes the cycle,
	// with a compare-and-set; ErrConcurrentRun when it moved.
	// fence is the lease's epoch, as in BatchCommit.Fence.
	Wrap(ctx context.Context, job string, from, fence int64, now time.Time) error
	// CountCreatedBetween counts payments rows created in [lo, hi], up to
	// limit (the count stops there): list mode's estimate of the
	// PaymentIntents a window holds.
	CountCreatedBetween(ctx context.Context, lo, hi time.Time, limit int64) (int64, error)
	// PendingRechecks counts the job's queued rechecks by reason.
	PendingRechecks(ctx context.Context, job string) (map[string]int, error)
	// NextRecheck returns when the job's earliest recheck of the given
	// reason (any reason when empty) is due; zero when none is queued.
	NextRecheck(ctx context.Context, job, reason string) (time.Time, error)
	// DatabaseNow returns the database's clock: the time Check.ReadAt is
	// taken on when no batch was read (a one-off recheck).
	DatabaseNow(ctx context.Context) (time.Time, error)
}

// Recheck reasons.
const (
	RecheckUnverifiable = "unverifiable"
	RecheckGrace        = "grace"
	RecheckChanged      = "changed"
)

// Lease is a held job lease (the sweep's, the catch-up's): one holder per
// job among every process, with a heartbeat.
type Lease interface {
	// Alive says whether the lease is still held (an error once it was
	// taken over or its heartbeat failed).
	Alive(ctx context.Context) error
	// Epoch is the lease's fencing token, sent with every commit
	// (BatchCommit.Fence); 0 means no fencing.
	Epoch() int64
	Release(ctx context.Context) error
}

// LeaseFunc acquires a job's lease; with wait it blocks until free,
// without it fails with an error matching ErrLeaseHeld.
type LeaseFunc func(ctx context.Context, job string, wait bool) (Lease, error)
