// Package readmodel holds the operator console's read models: what its
// pages show (the overview, a finding's page, the audit trail, the held
// repairs), as plain types. It is a leaf, like River's rivertype: the
// adapter that reads them (postgres.ConsoleReader) and the console that
// shows them both import it, so no adapter imports the console. A Finding
// and a Payment are the root's (payrecon.Finding, payrecon.Payment), shared
// with the CLI.
package readmodel

import (
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// PageSizeDefault is the findings list's page size.
const PageSizeDefault = 50

// HeldRepair is a repair command held for review, waiting for an approval.
type HeldRepair struct {
	OutboxID       int64
	Command        payrecon.Command
	HeldAt         time.Time
	FindingID      int64
	Kind           payrecon.Kind
	PaymentID      int64 // 0: none
	OrderID        string
	IntentID       string
	LocalStatus    string
	ExternalStatus string
	// StatusNow is the payment's status now ("" when it is gone).
	StatusNow string
	Reason    string
	// Job is the road that found it: a sweep job, webhook or events.
	Job string
}

// Overview is the console's first page.
type Overview struct {
	Now time.Time
	// Lag is the reconciliation lag; LagKnown is false on an empty table.
	Lag      time.Duration
	LagKnown bool
	// Rows is the size of payments: exact when RowsExact, else PostgreSQL's
	// planner estimate, shown as one (postgres.Status, the figure status
	// and the metrics read). NewRowsPerHour is G.
	Rows           int64
	RowsExact      bool
	NewRowsPerHour float64
	Jobs           []Job
	// Open lists open findings by kind, with the money at stake where the
	// findings carry amounts.
	Open      []KindCount
	OpenTotal int64
	// Repairs and Notifications are the two delivery queues.
	Repairs       Queue
	Notifications Queue
	// DeadLetters are the most recent repair dead letters.
	DeadLetters []DeadLetter
	// Held counts repair commands held for review whose finding is open;
	// HeldOldest is when the longest-waiting was held (zero: none).
	Held       int64
	HeldOldest time.Time
}

// Job is one sweep job's progress and projection.
type Job struct {
	Name string
	// Progress is the share of the table swept in this cycle (0..1).
	Progress       float64
	CycleAge       time.Duration
	SinceLastCycle time.Duration
	// LastCycleDuration is zero when no cycle completed yet.
	LastCycleDuration time.Duration
	// Throughput is the measured rows per second of sweeping.
	Throughput float64
	// Projection is the cycle-time arithmetic: B × R against G.
	Projection payrecon.PlanResult
	// LeaseHolder names the session sweeping now; empty when nobody does.
	LeaseHolder string
}

// KindCount is the open findings of one kind.
type KindCount struct {
	Kind    payrecon.Kind
	Verdict payrecon.Verdict
	Count   int64
	// Money is the sum of the amounts per currency, over the findings that
	// carry one; empty when none does (not zero: unknown).
	Money []Money
}

// Money is an amount in a currency's minor units.
type Money struct {
	// Currency is the ISO code, lower case as Stripe writes it.
	Currency string
	Amount   int64
	// Findings is how many findings the amount sums.
	Findings int64
}

// Queue is a delivery queue's backlog.
type Queue struct {
	// Backlog counts deliveries waiting or being retried.
	Backlog int64
	// Oldest is when the oldest waiting delivery was created (zero: none).
	Oldest time.Time
	// DeadLetters counts deliveries given up on.
	DeadLetters int64
}

// DeadLetter is a repair delivery River gave up on.
type DeadLetter struct {
	JobID     int64
	OutboxID  int64
	EventType string
	FindingID int64
	State     string
	Attempts  int
	LastError string
	At        time.Time
}

// Sample is one point of the history charts.
type Sample struct {
	At time.Time
	// Lag is the reconciliation lag; LagKnown is false when unknown.
	Lag          time.Duration
	LagKnown     bool
	OpenFindings int64
}

// FindingQuery selects findings. Zero fields do not filter.
type FindingQuery struct {
	Kinds    []payrecon.Kind
	Verdicts []payrecon.Verdict
	// State is "open" (default), "resolved" or "all".
	State string
	// DetectedAfter and DetectedBefore bound detected_at.
	DetectedAfter, DetectedBefore time.Time
	// After is the keyset cursor: findings strictly older than it.
	After *Cursor
	// Account keeps the findings of one account's payments ("" the
	// platform's own; Connect: Config.Accounts); nil keeps all.
	Account *string
	// Limit bounds the page (default 50).
	Limit int
}

// Cursor is a position in the findings list: (detected_at, id).
type Cursor struct {
	DetectedAt time.Time
	ID         int64
}

// FindingDetail is a finding's page.
type FindingDetail struct {
	Finding payrecon.Finding
	// Payment is nil when the PaymentIntent has no local row.
	Payment *payrecon.Payment
	// Stripe is what Stripe said at detection (details), pretty-printed
	// JSON; empty when nothing was recorded.
	Stripe string
	// Repair is the finding's repair command, nil when it has none.
	Repair   *Repair
	Timeline []Event
}

// Repair is a repair command and its delivery.
type Repair struct {
	OutboxID    int64
	EventType   string
	CreatedAt   time.Time
	ProcessedAt *time.Time
	Outcome     string
	LastError   string
	// JobID and JobState are its River job's (0 and "" when none).
	JobID       int64
	JobState    string
	Attempt     int
	MaxAttempts int
}

// Dead reports whether the delivery was given up on (retryable by hand).
func (r Repair) Dead() bool { return r.JobState == "discarded" || r.JobState == "cancelled" }

// Dropped reports whether the command was held and dropped, never applied:
// its finding closed before an approval.
func (r Repair) Dropped() bool {
	return r.ProcessedAt != nil && strings.HasPrefix(r.Outcome, payrecon.RepairDroppedPrefix)
}

// Held reports whether the command waits for an approval (River's pending
// state: --repair-mode review).
func (r Repair) Held() bool { return r.ProcessedAt == nil && r.JobState == "pending" }

// Event is one entry of a finding's timeline. Source names where it comes
// from (one query each; see the timeline sources of the read model) and
// selects how it is shown.
type Event struct {
	At     time.Time
	Source string
	Title  string
	Detail string
}

// PaymentMatch is a payment found by Lookup, or a PaymentIntent that has
// findings but no local row (Payment nil).
type PaymentMatch struct {
	Payment  *payrecon.Payment
	IntentID string
	Findings []payrecon.Finding
}

// AuditEntry is one console action.
type AuditEntry struct {
	ID        int64
	At        time.Time
	Operator  string
	Action    string
	FindingID int64
	JobID     int64
	Note      string
	Outcome   string
}
