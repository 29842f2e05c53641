package console

import (
	"context"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// ReadModel is what the console's pages read. Its methods only read: the
// console writes nothing except through Actions and the Sampler.
// postgres.ConsoleReader implements it.
type ReadModel interface {
	// Overview reads the headline figures at now.
	Overview(ctx context.Context, now time.Time) (Overview, error)
	// History returns the samples taken since, bucketed by bucket (the
	// largest lag and open-findings count within each bucket), oldest first.
	History(ctx context.Context, since time.Time, bucket time.Duration) ([]Sample, error)
	// Findings returns up to q.Limit findings matching q, newest first,
	// after q.After (keyset), and whether more follow.
	Findings(ctx context.Context, q FindingQuery) ([]FindingRow, bool, error)
	// Finding returns one finding with its payment, repair and timeline;
	// payrecon.ErrNotFound when there is none.
	Finding(ctx context.Context, id int64) (FindingDetail, error)
	// Lookup finds payments by id, order id or PaymentIntent id, with their
	// findings.
	Lookup(ctx context.Context, q string) ([]PaymentMatch, error)
	// Audit returns the latest console actions, newest first.
	Audit(ctx context.Context, limit int) ([]AuditEntry, error)
	// HeldRepairs returns up to limit repair commands held for review
	// (--repair-mode review) whose finding is open, the longest-waiting
	// first.
	HeldRepairs(ctx context.Context, limit int) ([]HeldRepair, error)
}

// Actions are the console's writes. Each records an audit entry with the
// operator's name; the service implements them with the same code paths
// as the CLI (findings resolve, findings recheck, relay --retry).
type Actions interface {
	// Resolve closes an open finding with a note.
	Resolve(ctx context.Context, findingID int64, operator, note string) error
	// Recheck asks Stripe about the finding's payment now and returns what
	// happened, in words.
	Recheck(ctx context.Context, findingID int64, operator string) (string, error)
	// RetryDeadLetter makes a dead-lettered repair job run again and returns
	// what happened, in words.
	RetryDeadLetter(ctx context.Context, jobID int64, operator string) (string, error)
	// ApproveRepairs lets held repair commands through (every held one with
	// all, else outboxIDs), as `payrecon repairs approve`, and returns what
	// happened, in words: a command whose finding closed meanwhile is
	// dropped, never applied.
	ApproveRepairs(ctx context.Context, outboxIDs []int64, all bool, operator string) (string, error)
}

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

// SessionStore keeps the console's sessions on the server, shared by the
// replicas: a cookie opens the console only while its session is stored,
// so a logout on any replica ends it there and everywhere.
// postgres.ConsoleSessions implements it. Sessions are known by the
// SHA-256 of their id, never by the id the cookie carries.
type SessionStore interface {
	// StartSession records a session until expires (and may delete the
	// sessions expired at now).
	StartSession(ctx context.Context, idHash []byte, operator string, now, expires time.Time) error
	// SessionValid reports whether the session is recorded and unexpired
	// at now.
	SessionValid(ctx context.Context, idHash []byte, now time.Time) (bool, error)
	// EndSession deletes a session; one that is not there is no error.
	EndSession(ctx context.Context, idHash []byte) error
}

// Overview is the console's first page.
type Overview struct {
	Now time.Time
	// Lag is the reconciliation lag; LagKnown is false on an empty table.
	Lag      time.Duration
	LagKnown bool
	// Rows is the size of payments (an estimate); NewRowsPerHour is G.
	Rows           int64
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

// FindingRow is one line of the findings list.
type FindingRow struct {
	ID             int64
	PaymentID      *int64
	IntentID       string
	OrderID        string
	Kind           payrecon.Kind
	Verdict        payrecon.Verdict
	LocalStatus    string
	ExternalStatus string
	Reason         string
	RepairOutcome  string
	DetectedAt     time.Time
	ResolvedAt     *time.Time
	Resolution     string
	ResolvedBy     string
	ResolutionNote string
	// Amount is what Stripe said the payment is for; nil when unknown.
	Amount   *int64
	Currency string
}

// Open reports whether the finding is unresolved.
func (f FindingRow) Open() bool { return f.ResolvedAt == nil }

// FindingDetail is a finding's page.
type FindingDetail struct {
	Finding FindingRow
	// Payment is nil when the PaymentIntent has no local row.
	Payment *Payment
	// Stripe is what Stripe said at detection (details), pretty-printed
	// JSON; empty when nothing was recorded.
	Stripe string
	// Repair is the finding's repair command, nil when it has none.
	Repair   *Repair
	Timeline []Event
}

// Payment is a payments row.
type Payment struct {
	ID               int64
	OrderID          string
	IntentID         string
	Status           string
	Version          int64
	CreatedAt        time.Time
	UpdatedAt        time.Time
	ObservedStatus   string
	LastReconciledAt *time.Time
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
	Payment  *Payment
	IntentID string
	Findings []FindingRow
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

// StripeHealth is the Stripe client's state in this process.
type StripeHealth struct {
	// Rate is the limiter's current rate and Budget its ceiling, requests
	// per second (0: unlimited).
	Rate, Budget float64
	// Requests counts calls since the process started, by outcome (ok,
	// not_found, unavailable, rate_limited, config_error, canceled).
	Requests map[string]float64
}

// Errors sums the outcomes that are failures.
func (s StripeHealth) Errors() float64 {
	var n float64
	for k, v := range s.Requests {
		if k != "ok" && k != "not_found" && k != "canceled" {
			n += v
		}
	}
	return n
}

// Total sums every outcome.
func (s StripeHealth) Total() float64 {
	var n float64
	for _, v := range s.Requests {
		n += v
	}
	return n
}
