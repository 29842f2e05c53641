package payrecon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The settlement finding kinds: did the money of each payment reach the
// bank? They are judged from Stripe's payouts and the balance transactions
// each automatic payout contains (its lines), against the payments table.
// Every one is needs_review and never repaired automatically; each is its
// own finding, beside any status or money finding of the same payment.
const (
	// KindSettledNotPaidLocally: a charge was settled in a payout (and the
	// money kept: not refunded or lost to a dispute since), but its payment
	// is not paid locally, or has no payments row at all.
	KindSettledNotPaidLocally Kind = "settled_not_paid_locally"
	// KindSettledAmountMismatch: the gross settled for a payment's charges
	// differs from the local amount, in the same currency.
	KindSettledAmountMismatch Kind = "settled_amount_mismatch"
	// KindPaidNotSettled: paid locally, captured in Stripe, and its charge
	// in no payout --settle-after after the payment although Stripe has
	// paid out since.
	KindPaidNotSettled Kind = "paid_not_settled"
)

// SettlementKinds lists the settlement kinds in documentation order.
var SettlementKinds = []Kind{KindSettledNotPaidLocally, KindSettledAmountMismatch, KindPaidNotSettled}

// IsSettlement reports whether k is one of the settlement kinds.
func (k Kind) IsSettlement() bool { return slices.Contains(SettlementKinds, k) }

// Defaults of the settlement check.
const (
	// DefaultSettleAfter is --settle-after's default: Stripe pays a charge
	// out within days (2 on a standard schedule, up to 14 for new
	// accounts); two weeks after the payment with later payouts read and
	// no line for it, the money is missing.
	DefaultSettleAfter = 14 * 24 * time.Hour
	// DefaultPayoutsSince is how far back `payrecon payouts` lists payouts
	// (--since).
	DefaultPayoutsSince = 90 * 24 * time.Hour
)

// PayoutStatus is a payout's status as Stripe reports it.
type PayoutStatus string

// The payout statuses Stripe documents.
const (
	PayoutPending   PayoutStatus = "pending"
	PayoutInTransit PayoutStatus = "in_transit"
	PayoutPaid      PayoutStatus = "paid"
	PayoutFailed    PayoutStatus = "failed"
	PayoutCanceled  PayoutStatus = "canceled"
)

// ReconciliationCompleted is the reconciliation_status of an automatic
// payout whose balance transactions Stripe can list (GET
// /v1/balance_transactions?payout=po_…); before that it is "in_progress",
// and "not_applicable" for manual payouts.
const ReconciliationCompleted = "completed"

// ManualPayoutNote is what payrecon says of a manual payout: Stripe does not
// know which transactions a payout made by hand (or an instant payout)
// contains, so it has no lines, only its total.
const ManualPayoutNote = "Stripe cannot itemise manual payouts"

// Payout is the part of a Stripe Payout payrecon reads. Amounts are in the
// currency's minor units, as everywhere in payrecon.
type Payout struct {
	ID string `json:"id"`
	// Account is the Stripe account the payout belongs to: "" for the
	// platform's own account, "acct_…" for a connected account.
	Account string `json:"account,omitempty"`
	// Amount is what the payout sends to the bank (Stripe's amount).
	Amount   int64        `json:"amount"`
	Currency string       `json:"currency"`
	Status   PayoutStatus `json:"status"`
	// Automatic is true for payouts Stripe made on the payout schedule:
	// only those can be itemised.
	Automatic bool `json:"automatic"`
	// Method is "standard" or "instant".
	Method string `json:"method,omitempty"`
	// Created is when Stripe created the payout; ArrivalDate when it is
	// expected to reach (or reached) the bank.
	Created     time.Time `json:"created"`
	ArrivalDate time.Time `json:"arrival_date"`
	// ReconciliationStatus is Stripe's reconciliation_status: "completed"
	// once its balance transactions can be listed.
	ReconciliationStatus string `json:"reconciliation_status"`
	// FailureCode is Stripe's failure_code of a failed payout, "" otherwise.
	FailureCode string `json:"failure_code,omitempty"`
}

// Itemisable reports whether Stripe can list the payout's balance
// transactions now: an automatic payout whose reconciliation completed.
func (p Payout) Itemisable() bool {
	return p.Automatic && p.ReconciliationStatus == ReconciliationCompleted
}

// PayoutLine is one balance transaction of a payout: a charge, a refund, a
// dispute, a fee, an adjustment, or the payout's own transaction.
type PayoutLine struct {
	// ID is the balance transaction's id ("txn_…"): a line is stored once
	// per id, however often it is read.
	ID       string `json:"id"`
	PayoutID string `json:"payout_id"`
	Account  string `json:"account,omitempty"`
	// Type and ReportingCategory are Stripe's (charge / charge, refund /
	// refund, adjustment / dispute, stripe_fee / fee, payout / payout, …).
	Type              string `json:"type"`
	ReportingCategory string `json:"reporting_category"`
	// Amount is the gross, Fee what Stripe kept, Net = Amount − Fee: what
	// the line adds to the payout. Refunds and disputes are negative.
	Amount   int64  `json:"amount"`
	Fee      int64  `json:"fee"`
	Net      int64  `json:"net"`
	Currency string `json:"currency"`
	// Converted is true when Stripe converted the line from the charge's
	// currency into the payout's (an exchange_rate is set): its amount is
	// then not in the payment's currency.
	Converted bool      `json:"converted,omitempty"`
	Created   time.Time `json:"created"`
	// SourceID and SourceType name what the line is about ("ch_…" /
	// "charge", "re_…" / "refund", "dp_…" / "dispute", "po_…" / "payout").
	SourceID   string `json:"source_id,omitempty"`
	SourceType string `json:"source_type,omitempty"`
	// ChargeID is the charge the line is about: a charge's own id, a
	// refund's or a dispute's charge; "" for other sources.
	ChargeID string `json:"charge_id,omitempty"`
	// IntentID is the PaymentIntent of that charge (the source's
	// payment_intent), "" when the source has none (a fee, an adjustment,
	// a charge made without a PaymentIntent).
	IntentID string `json:"payment_intent_id,omitempty"`
}

// OwnLine reports whether the line is the payout's own balance transaction
// (the money leaving the balance for the bank), which Stripe lists among
// the payout's transactions: it is not one of the lines that add up to the
// payout's amount.
func (l PayoutLine) OwnLine() bool {
	return l.SourceID != "" && l.SourceID == l.PayoutID
}

// PayoutQuery selects payouts, Stripe's list filter: created ≥ CreatedGTE
// (whole seconds; zero: unbounded), newest first, pages of up to Limit (at
// most 100), continuing after StartingAfter, for Account ("" the platform).
type PayoutQuery struct {
	Account       string
	CreatedGTE    time.Time
	StartingAfter string
	Limit         int
}

// PayoutPage is one page of payouts; HasMore says another page follows.
type PayoutPage struct {
	Payouts []Payout
	HasMore bool
}

// PayoutLineQuery selects the balance transactions of one automatic
// payout, newest first, pages of up to Limit (at most 100), continuing
// after StartingAfter.
type PayoutLineQuery struct {
	Account       string
	PayoutID      string
	StartingAfter string
	Limit         int
}

// PayoutLinePage is one page of a payout's lines.
type PayoutLinePage struct {
	Lines   []PayoutLine
	HasMore bool
}

// PayoutSource reads payouts and their balance transactions from Stripe
// (GET /v1/payouts, GET /v1/balance_transactions?payout=…), every request
// under the given account's Stripe-Account header ("" the platform). Errors
// are mapped as Gateway's are.
type PayoutSource interface {
	ListPayouts(ctx context.Context, q PayoutQuery) (PayoutPage, error)
	RetrievePayout(ctx context.Context, account, id string) (Payout, error)
	ListPayoutLines(ctx context.Context, q PayoutLineQuery) (PayoutLinePage, error)
}

// Settlement categories: how a line's reporting category counts in a
// payout's totals (gross, refunds, disputes, fees, other, net).
const (
	CategoryGross    = "gross"
	CategoryRefunds  = "refunds"
	CategoryDisputes = "disputes"
	CategoryFees     = "fees"
	CategoryOther    = "other"
)

// SettlementCategory maps Stripe's reporting_category onto the totals
// payrecon shows: charges are the gross; refunds (and failed refunds) the
// refunds; disputes and won disputes the disputes; fee lines the fees;
// everything else (adjustments, transfers, reserves…) other.
func SettlementCategory(reportingCategory string) string {
	switch reportingCategory {
	case "charge":
		return CategoryGross
	case "refund", "refund_failure", "partial_capture_reversal":
		return CategoryRefunds
	case "dispute", "dispute_reversal":
		return CategoryDisputes
	case "fee":
		return CategoryFees
	}
	return CategoryOther
}

// CategoryTotal is what the lines of one reporting category add up to.
type CategoryTotal struct {
	Count  int   `json:"count"`
	Amount int64 `json:"amount"`
	Fee    int64 `json:"fee"`
	Net    int64 `json:"net"`
}

// PayoutTotals is a payout's lines summed as finance reads them: Gross
// (charges), Refunds and Disputes (negative), Fees (every fee Stripe kept,
// and fee lines, negative), Other, and Net, their sum, which must equal
// the payout's amount. The payout's own line is left out.
type PayoutTotals struct {
	Lines    int   `json:"lines"`
	Gross    int64 `json:"gross"`
	Refunds  int64 `json:"refunds"`
	Disputes int64 `json:"disputes"`
	Fees     int64 `json:"fees"`
	Other    int64 `json:"other"`
	Net      int64 `json:"net"`
}

// SumPayoutLines adds up a payout's lines by reporting category, leaving
// out the payout's own line.
func SumPayoutLines(lines []PayoutLine) map[string]CategoryTotal {
	out := map[string]CategoryTotal{}
	for _, l := range lines {
		if l.OwnLine() {
			continue
		}
		t := out[l.ReportingCategory]
		t.Count++
		t.Amount += l.Amount
		t.Fee += l.Fee
		t.Net += l.Net
		out[l.ReportingCategory] = t
	}
	return out
}

// TotalsOf turns the totals by reporting category into PayoutTotals.
func TotalsOf(byCategory map[string]CategoryTotal) PayoutTotals {
	var t PayoutTotals
	for cat, c := range byCategory {
		t.Lines += c.Count
		t.Net += c.Net
		t.Fees -= c.Fee
		switch SettlementCategory(cat) {
		case CategoryGross:
			t.Gross += c.Amount
		case CategoryRefunds:
			t.Refunds += c.Amount
		case CategoryDisputes:
			t.Disputes += c.Amount
		case CategoryFees:
			t.Fees += c.Amount
		default:
			t.Other += c.Amount
		}
	}
	return t
}

// PayoutProblem is what is wrong with a payout itself.
type PayoutProblem string

// The payout problems payrecon flags (list, show, metrics).
const (
	// ProblemLinesDoNotAddUp: the payout's lines, read in full, do not add
	// up to its amount.
	ProblemLinesDoNotAddUp PayoutProblem = "lines_do_not_add_up"
	// ProblemFailedAfterPaid: payrecon saw the payout paid, and it failed
	// since (the bank returned it).
	ProblemFailedAfterPaid PayoutProblem = "failed_after_paid"
	// ProblemCanceledAfterPaid: payrecon saw the payout paid, and it was
	// canceled since.
	ProblemCanceledAfterPaid PayoutProblem = "canceled_after_paid"
)

// PayoutProblems lists the problems in documentation order.
var PayoutProblems = []PayoutProblem{ProblemLinesDoNotAddUp, ProblemFailedAfterPaid, ProblemCanceledAfterPaid}

// CheckPayout is the payout's own check: its lines (when read in full)
// add up to its amount, and it did not fail or get canceled after payrecon
// saw it paid. It returns the problems found, none for a sound payout.
func CheckPayout(p Payout, linesRead bool, t PayoutTotals, seenPaid bool) []PayoutProblem {
	var out []PayoutProblem
	if linesRead && t.Net != p.Amount {
		out = append(out, ProblemLinesDoNotAddUp)
	}
	if seenPaid {
		switch p.Status {
		case PayoutFailed:
			out = append(out, ProblemFailedAfterPaid)
		case PayoutCanceled:
			out = append(out, ProblemCanceledAfterPaid)
		}
	}
	return out
}

// Stripe event types of payouts. Each triggers a read of its payout at
// once (in `payrecon run`).
const (
	EventPayoutPaid                    = "payout.paid"
	EventPayoutFailed                  = "payout.failed"
	EventPayoutCanceled                = "payout.canceled"
	EventPayoutReconciliationCompleted = "payout.reconciliation_completed"
)

// PayoutEventTypes are the payout events payrecon acts on.
var PayoutEventTypes = []string{EventPayoutPaid, EventPayoutFailed, EventPayoutCanceled, EventPayoutReconciliationCompleted}

// PayoutID is the payout a payout event is about ("" for other events).
func (e Event) PayoutID() string {
	if e.Object.Object == "payout" && slices.Contains(PayoutEventTypes, e.Type) {
		return e.Object.ID
	}
	return ""
}

// OutcomePayoutQueued is the outcome of a payout event that queued a read
// of its payout.
const OutcomePayoutQueued = "payout_read_queued"

// SettlementLocal is a payment's local row as the settlement check reads
// it.
type SettlementLocal struct {
	PaymentID int64       `json:"payment_id"`
	OrderID   string      `json:"order_id,omitempty"`
	Status    LocalStatus `json:"status"`
	// Amount is nil when payments has no amount column or the value is
	// NULL; Currency "" likewise.
	Amount   *int64    `json:"amount,omitempty"`
	Currency string    `json:"currency,omitempty"`
	Created  time.Time `json:"created_at"`
	// Observed is the last Stripe status the sweep verified
	// (observed_external_status): succeeded means captured.
	Observed StripeStatus `json:"observed_external_status,omitempty"`
}

// Settled is what the lines of every payout read say of one
// PaymentIntent's money.
type Settled struct {
	// Charges counts its charge lines; Gross sums their amounts.
	Charges int   `json:"charges"`
	Gross   int64 `json:"gross"`
	// Kept sums the amounts of all its lines: the gross less what was
	// refunded or lost to disputes since.
	Kept int64 `json:"kept"`
	Fee  int64 `json:"fee"`
	Net  int64 `json:"net"`
	// Currency is the lines' currency ("" when they are in several).
	Currency string `json:"currency"`
	// Converted is true when a line was converted from another currency.
	Converted bool `json:"converted,omitempty"`
	// PayoutID and ArrivalDate name a payout of its charge lines (the
	// least id, when there are several).
	PayoutID    string    `json:"payout_id,omitempty"`
	ArrivalDate time.Time `json:"arrival_date"`
}

// SettlementInput is everything the settlement rules look at for one
// PaymentIntent.
type SettlementInput struct {
	IntentID string `json:"payment_intent_id"`
	// Local is the payments row, nil when there is none.
	Local   *SettlementLocal `json:"local,omitempty"`
	Settled Settled          `json:"settled"`
	Now     time.Time        `json:"now"`
	// LaterPayout is true when an automatic payout of the account, read in
	// full, was created at least --settle-after after the payment, and the
	// payment after the first automatic payout payrecon read (so any
	// payout that could hold it was read).
	LaterPayout bool `json:"later_payout"`
}

// SettlementChecks says which settlement rules can run: the local money
// columns present, the kinds ignored, and --settle-after (0: paid_not_settled
// is off).
type SettlementChecks struct {
	Amount, Currency bool
	Ignore           map[Kind]bool
	SettleAfter      time.Duration
}

// SettlementRule is one row of the settlement table: the kind it records,
// what it means and what to do.
type SettlementRule struct {
	Kind Kind `json:"kind"`
	// Compares says what is compared, in words; Skipped when the rule
	// cannot be judged and leaves its finding alone.
	Compares string `json:"compares"`
	Skipped  string `json:"not_compared_when"`
	Meaning  string `json:"meaning"`
	Action   string `json:"what_to_do"`

	judged func(SettlementChecks, SettlementInput) bool
	check  func(SettlementChecks, SettlementInput) (string, bool)
}

// Verdict is always needs_review: settlement is never repaired.
func (SettlementRule) Verdict() Verdict { return NeedsReview }

// comparable reports whether the settled gross can be compared with the
// local amount: same currency (or no local currency to say otherwise), no
// conversion.
func comparable(sc SettlementChecks, in SettlementInput) bool {
	l := in.Local
	if !sc.Amount || l == nil || l.Amount == nil || in.Settled.Charges == 0 || in.Settled.Converted || in.Settled.Currency == "" {
		return false
	}
	return !sc.Currency || l.Currency == "" || strings.EqualFold(l.Currency, in.Settled.Currency)
}

// settlementTable is the single source of ClassifySettlement and the tests.
var settlementTable = []SettlementRule{
	{
		Kind:     KindSettledNotPaidLocally,
		Compares: "the PaymentIntent's charge lines in the payouts read, and what its lines kept (charges less refunds and disputes), vs the local status",
		Skipped:  "never: every PaymentIntent a payout line names is judged",
		Meaning:  "a charge was settled in a payout (and the money kept) but its payment is not paid locally, or has no payments row: money reached the bank for an order the application does not consider paid",
		Action:   "fulfil the order and mark it paid (a lost webhook: the repair of `missed_success` heals this), or refund the charge in Stripe; for a PaymentIntent another system made, ignore it; it heals when the payment is paid locally",
		judged:   func(SettlementChecks, SettlementInput) bool { return true },
		check: func(_ SettlementChecks, in SettlementInput) (string, bool) {
			s := in.Settled
			if s.Charges == 0 || s.Kept <= 0 {
				return "", false
			}
			if in.Local == nil {
				return fmt.Sprintf("%d %s settled in payout %s, and no payments row has this PaymentIntent", s.Kept, upper(s.Currency), s.PayoutID), true
			}
			if in.Local.Status == StatusPaid {
				return "", false
			}
			return fmt.Sprintf("%d %s settled in payout %s, but the payment is %s locally", s.Kept, upper(s.Currency), s.PayoutID, in.Local.Status), true
		},
	},
	{
		Kind:     KindSettledAmountMismatch,
		Compares: "the gross of its charge lines vs the local amount",
		Skipped:  "no amount column or a NULL amount, no charge line, lines in another currency than the row's, or converted",
		Meaning:  "the gross settled for the payment's charges differs from the order's amount, in the same currency: the order and what Stripe paid out disagree",
		Action:   "compare the order with the charge and the payout in the Dashboard; fix the order or refund/collect the difference; then `findings resolve`",
		judged:   comparable,
		check: func(sc SettlementChecks, in SettlementInput) (string, bool) {
			if !comparable(sc, in) || *in.Local.Amount == in.Settled.Gross {
				return "", false
			}
			return fmt.Sprintf("local amount %d, settled gross %d %s in payout %s", *in.Local.Amount, in.Settled.Gross, upper(in.Settled.Currency), in.Settled.PayoutID), true
		},
	},
	{
		Kind:     KindPaidNotSettled,
		Compares: "local `paid` and verified `succeeded`, created `--settle-after` ago, vs the lines of the automatic payouts read since",
		Skipped:  "`--settle-after 0`, the payment older than the first payout read, no automatic payout read since",
		Meaning:  "paid locally and captured in Stripe, but its charge is in no payout `--settle-after` (14 days) after the payment, although Stripe has paid out since: the money has not reached the bank",
		Action:   "find the charge in the Dashboard: held in reserve, refunded before payout, paid to another account, or never captured; ask Stripe support if it is none of these; it heals when a payout holding it is read",
		judged: func(sc SettlementChecks, _ SettlementInput) bool {
			return sc.SettleAfter > 0
		},
		check: func(sc SettlementChecks, in SettlementInput) (string, bool) {
			l := in.Local
			if sc.SettleAfter <= 0 || l == nil || l.Status != StatusPaid || l.Observed != IntentSucceeded || in.Settled.Charges > 0 ||
				l.Created.IsZero() || in.Now.Sub(l.Created) < sc.SettleAfter || !in.LaterPayout {
				return "", false
			}
			return fmt.Sprintf("paid locally and succeeded in Stripe %s ago, in no payout read, although payouts created %s after it were read",
				FormatDuration(in.Now.Sub(l.Created)), FormatDuration(sc.SettleAfter)), true
		},
	},
}

// SettlementTable returns a copy of the settlement rules in documentation
// order.
func SettlementTable() []SettlementRule { return append([]SettlementRule(nil), settlementTable...) }

// Evaluated lists the settlement kinds these checks judge for the input: a
// kind is left out when it is ignored or cannot be judged (no local
// amount to compare, another currency, --settle-after off). A finding of an
// evaluated kind that ClassifySettlement no longer returns has healed; one
// of a kind not evaluated is left alone.
func (sc SettlementChecks) Evaluated(in SettlementInput) []Kind {
	var out []Kind
	for _, r := range settlementTable {
		if !sc.Ignore[r.Kind] && r.judged(sc, in) {
			out = append(out, r.Kind)
		}
	}
	return out
}

// ClassifySettlement is the pure settlement check: from what the payouts
// say of one PaymentIntent and its local row to the drifts found, in table
// order, each needs_review. Ignored kinds are never returned. It is total:
// any input, no panic.
func (sc SettlementChecks) ClassifySettlement(in SettlementInput) []Drift {
	var out []Drift
	for _, r := range settlementTable {
		if sc.Ignore[r.Kind] {
			continue
		}
		if reason, ok := r.check(sc, in); ok {
			out = append(out, Drift{Kind: r.Kind, Reason: reason})
		}
	}
	return out
}

// SettlementJudgment is the verdict on one PaymentIntent: the drifts found
// and the kinds judged (an open finding of a judged kind not among Drifts
// heals).
type SettlementJudgment struct {
	Input  SettlementInput `json:"input"`
	Drifts []Drift         `json:"drifts"`
	Judged []Kind          `json:"judged"`
}

// Judge classifies one input.
func (sc SettlementChecks) Judge(in SettlementInput) SettlementJudgment {
	return SettlementJudgment{Input: in, Drifts: sc.ClassifySettlement(in), Judged: sc.Evaluated(in)}
}

// SettlementScope says which PaymentIntents a settlement judgment covers:
// those of one payout's lines (PayoutID set), or a whole round's (PayoutID
// empty): every line of the account's payouts created since Since, every
// open settlement finding, and every payment that may be paid_not_settled.
type SettlementScope struct {
	Account     string
	Since       time.Time
	PayoutID    string
	SettleAfter time.Duration
	Now         time.Time
}

// SettlementRow is one PaymentIntent in scope: what the rules look at, the
// kinds of its open settlement findings, and whether a line of it is not
// yet matched to its (now existing) local row.
type SettlementRow struct {
	Input     SettlementInput
	Open      []Kind
	Unmatched bool
}

// SettlementResult counts what a commit of judgments did.
type SettlementResult struct {
	Opened map[Kind]int `json:"opened"`
	Healed map[Kind]int `json:"healed"`
	// Matched counts lines that got the id of a local row that appeared.
	Matched int `json:"matched_lines"`
}

// PayoutLines is a payout with all its lines.
type PayoutLines struct {
	Payout Payout
	Lines  []PayoutLine
}

// SettlementStore is the storage the payouts check needs. The postgres
// package implements it.
type SettlementStore interface {
	// SavePayouts records payouts as Stripe listed them and returns the
	// ids of those whose lines are to be read: automatic, reconciliation
	// completed, not read in full under their current status.
	SavePayouts(ctx context.Context, payouts []Payout, now time.Time) ([]string, error)
	// SavePayoutLines records payouts' lines, each payout's read in full,
	// one row per balance transaction, and marks each payout read under
	// its status, in one transaction; it returns how many lines were new.
	SavePayoutLines(ctx context.Context, payouts []PayoutLines, now time.Time) (int, error)
	// SettlementInputs calls fn for every PaymentIntent in scope.
	SettlementInputs(ctx context.Context, scope SettlementScope, fn func(SettlementRow) error) error
	// CommitSettlement opens the findings of the judgments' drifts (once
	// each) and heals the open ones of judged kinds no longer found, in one
	// transaction.
	CommitSettlement(ctx context.Context, js []SettlementJudgment, now time.Time) (SettlementResult, error)
}

// FormatSettlementTable renders the settlement rules as a Markdown table:
// the third table of `payrecon classify --table`, copied into the README
// between BeginSettlementTableMarker and EndSettlementTableMarker (a test
// compares them).
func FormatSettlementTable() string {
	var b strings.Builder
	b.WriteString("| kind | compares | not judged when | verdict |\n")
	b.WriteString("| --- | --- | --- | --- |\n")
	for _, r := range settlementTable {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.Kind, r.Compares, r.Skipped, r.Verdict())
	}
	return b.String()
}

// Markers around the generated settlement table in the README.
const (
	BeginSettlementTableMarker = "<!-- settlement-table:begin (generated by `payrecon classify --table`; a test checks it) -->"
	EndSettlementTableMarker   = "<!-- settlement-table:end -->"
)
