package readmodel

import (
	"time"

	"github.com/payrecon/payrecon"
)

// AccountsSummary is the overview's card of a platform's accounts.
type AccountsSummary struct {
	Accounts, Completed, Behind int
	// BehindAfter is how old an account's last cycle may be before it is
	// counted behind.
	BehindAfter time.Duration
	// Lag is the worst account's; Worst the few worst, worst first.
	Lag   time.Duration
	Worst []AccountLine
}

// AccountLine is one account's line on the Accounts page.
type AccountLine struct {
	// Account is "" for the platform's own rows; Job its sweep job.
	Account, Job string
	Lag          time.Duration
	// LastCycleCompletedAt is zero when none completed; Behind when none
	// did within AccountsSummary.BehindAfter.
	LastCycleCompletedAt time.Time
	Behind               bool
	OpenFindings         int64
}

// Name is the account as the pages name it: "platform" for "".
func (l AccountLine) Name() string {
	if l.Account == "" {
		return "platform"
	}
	return l.Account
}

// AccountDetail is one account's page.
type AccountDetail struct {
	AccountLine
	// The cursor: the last payments id of the current cycle, when the
	// cycle began, its rows so far, when the cursor last moved.
	LastID         int64
	CycleStartedAt time.Time
	CycleRows      int64
	AdvancedAt     time.Time
	// The last completed cycle.
	LastCycleDuration time.Duration
	LastCycleRows     int64
	// Throughput is the measured sweep rate, rows per second of sweeping.
	Throughput float64
	// Rechecks counts the rows queued for an early recheck, by reason.
	Rechecks map[string]int
	// LeaseHolder is who holds the account's lease now (`scan --once`), if
	// anyone; the River batches of `run` need none.
	LeaseHolder string
	// OpenByKind counts its open findings by kind; Findings are the newest
	// of them (at most AccountFindingsShown).
	OpenByKind []AccountKindCount
	Findings   []AccountFinding
	// Events is the connected account's events catch-up cursor (nil for
	// the platform's own, or before its first round).
	Events *AccountEvents
	// Allocation is the account's projected reads over Stripe's 30 days
	// against its read allocation, at the cycle the sweep keeps (nil when
	// the reader does not know the sweep's mode and cycle).
	Allocation *payrecon.AllocationResult
	// Stretched: --read-share stretched the account's cycle to
	// Allocation.Cycle.
	Stretched bool
}

// More reports whether the account has more open findings than its page
// lists.
func (d AccountDetail) More() bool { return int64(len(d.Findings)) < d.OpenFindings }

// AccountKindCount is an account's open findings of one kind.
type AccountKindCount struct {
	Kind  payrecon.Kind
	Count int64
}

// AccountFinding is one line of an account's open findings.
type AccountFinding struct {
	ID         int64
	PaymentID  int64
	IntentID   string
	Kind       payrecon.Kind
	Verdict    payrecon.Verdict
	Reason     string
	DetectedAt time.Time
}

// AccountEvents is a connected account's events catch-up.
type AccountEvents struct {
	Job     string
	EventID string
	// Age is how far behind the catch-up may be; LastDelay the last
	// detection delay (Stripe's created → applied).
	Age, LastDelay time.Duration
}

// AccountFindingsShown is how many open findings an account's page lists.
const AccountFindingsShown = 20
