package payrecon

import (
	"fmt"
	"strings"
)

// The money finding kinds: drift the PaymentIntent's status does not show.
// Every one is needs_review and never repaired automatically; each is its own
// finding, beside any status finding of the same payment.
const (
	// KindAmountMismatch: the local amount differs from what Stripe took
	// (amount_received) for a paid/succeeded pair, or from what the intent
	// asks for (amount) otherwise.
	KindAmountMismatch Kind = "amount_mismatch"
	// KindCurrencyMismatch: the local currency differs from the intent's,
	// compared case-insensitively.
	KindCurrencyMismatch Kind = "currency_mismatch"
	// KindRefundedExternally: paid locally, but the charge was fully
	// refunded (in the Dashboard, or by another system).
	KindRefundedExternally Kind = "refunded_externally"
	// KindPartiallyRefunded: paid locally, and part of the charge was
	// refunded: 0 < amount_refunded < amount_captured.
	KindPartiallyRefunded Kind = "partially_refunded"
	// KindDisputed: the cardholder disputed the charge (a chargeback),
	// whatever the local status.
	KindDisputed Kind = "disputed"
)

// MoneyKinds lists the money kinds in documentation order.
var MoneyKinds = []Kind{
	KindAmountMismatch,
	KindCurrencyMismatch,
	KindRefundedExternally,
	KindPartiallyRefunded,
	KindDisputed,
}

// SideKinds lists the kinds recorded beside the status verdict, each its
// own finding, healed when judged again and not found: the money kinds,
// stuck_in_flight and the settlement kinds (judged by the payouts check,
// never by the sweep). They never supersede a status finding, nor are
// superseded by one.
func SideKinds() []Kind {
	return append(append([]Kind(nil), MoneyKinds...), sideExtra...)
}

// sideExtra are side kinds that are not money kinds: stuck_in_flight,
// account_mismatch (opened by an event, never judged by the sweep, so
// closed only by a person) and the settlement kinds (judged by the payouts
// check, never by the sweep).
var sideExtra = append([]Kind{KindStuckInFlight, KindAccountMismatch}, SettlementKinds...)

// IsMoney reports whether k is one of the money kinds.
func (k Kind) IsMoney() bool {
	for _, m := range MoneyKinds {
		if k == m {
			return true
		}
	}
	return false
}

// LocalMoney is the local row's amount and currency, when payments has the
// columns (see --amount-column and --currency-column). Amount is nil when
// the column is absent or the value is NULL: not compared. Currency is ""
// when absent or NULL: not compared.
type LocalMoney struct {
	Amount   *int64 `json:"amount,omitempty"`
	Currency string `json:"currency,omitempty"`
}

// MoneyInput is what one money rule looks at: the local status and money,
// and the PaymentIntent Stripe returned (with its latest charge, expanded).
type MoneyInput struct {
	Local  LocalStatus
	Money  LocalMoney
	Intent Intent
}

// Drift is one drift the sweep records beside the status verdict, as its
// own finding: a money drift (ClassifyMoney) or a payment stuck in flight.
type Drift struct {
	Kind   Kind   `json:"kind"`
	Reason string `json:"reason"`
}

// MoneyRule is one row of the money table: the kind it records, which local
// statuses it applies to, what it compares, what it means and what to do.
// The table is the single source of ClassifyMoney, the tests,
// `payrecon classify --table` and the README.
type MoneyRule struct {
	Kind Kind `json:"kind"`
	// Local says which local statuses the rule looks at ("any" or one
	// status).
	Local string `json:"local_status"`
	// Compares says what is compared, in words.
	Compares string `json:"compares"`
	// Skipped says when the rule cannot be judged and records nothing.
	Skipped string `json:"not_compared_when"`
	// Meaning and Action are the README's columns.
	Meaning string `json:"meaning"`
	Action  string `json:"what_to_do"`
	// Needs names what the rule reads: "amount" and "currency" are the
	// local columns, "charge" the expanded latest charge.
	Needs string `json:"needs"`

	check func(MoneyInput) (string, bool)
}

// Verdict is always needs_review: money is never repaired automatically.
func (MoneyRule) Verdict() Verdict { return NeedsReview }

// What each rule reads.
const (
	NeedsAmount   = "amount"
	NeedsCurrency = "currency"
	NeedsCharge   = "charge"
)

// moneyTable is the single source of the money checks.
var moneyTable = []MoneyRule{
	{
		Kind: KindAmountMismatch, Local: "any", Needs: NeedsAmount,
		Compares: "local amount vs `amount_received` when local paid and Stripe succeeded, vs `amount` otherwise",
		Skipped:  "local amount NULL or no amount column",
		Meaning:  "the order's amount differs from what Stripe took (or asks for): captured for less, or the order changed after the intent was made",
		Action:   "compare the order with the PaymentIntent in the Dashboard; refund the difference or collect it, fix the row; then `findings resolve`",
		check: func(in MoneyInput) (string, bool) {
			if in.Money.Amount == nil {
				return "", false
			}
			local, field, stripe := *in.Money.Amount, "amount", in.Intent.Amount
			if in.Local == StatusPaid && in.Intent.Status == IntentSucceeded {
				field, stripe = "amount_received", in.Intent.AmountReceived
			}
			if local == stripe {
				return "", false
			}
			return fmt.Sprintf("local amount %d, Stripe %s %d", local, field, stripe), true
		},
	},
	{
		Kind: KindCurrencyMismatch, Local: "any", Needs: NeedsCurrency,
		Compares: "local currency vs the intent's `currency`, case-insensitively",
		Skipped:  "local currency NULL or empty, or no currency column",
		Meaning:  "the order is in one currency, the PaymentIntent in another",
		Action:   "find the checkout that made the intent; refund and charge again in the right currency, or fix the row; then `findings resolve`",
		check: func(in MoneyInput) (string, bool) {
			if in.Money.Currency == "" || in.Intent.Currency == "" || strings.EqualFold(in.Money.Currency, in.Intent.Currency) {
				return "", false
			}
			return fmt.Sprintf("local currency %s, Stripe %s", in.Money.Currency, in.Intent.Currency), true
		},
	},
	{
		Kind: KindRefundedExternally, Local: string(StatusPaid), Needs: NeedsCharge,
		Compares: "the latest charge's `refunded` (fully refunded)",
		Skipped:  "no charge, or the charge was not expanded",
		Meaning:  "marked paid, but the whole charge was refunded outside the application (Dashboard, another system)",
		Action:   "cancel the order or stop its shipment; if the refund was a mistake, charge again; then `findings resolve`",
		check: func(in MoneyInput) (string, bool) {
			c := in.Intent.LatestCharge
			if in.Local != StatusPaid || !c.Expanded() || !c.Refunded {
				return "", false
			}
			return fmt.Sprintf("charge %s fully refunded (%d of %d %s)", c.ID, c.AmountRefunded, c.AmountCaptured, upper(c.Currency)), true
		},
	},
	{
		Kind: KindPartiallyRefunded, Local: string(StatusPaid), Needs: NeedsCharge,
		Compares: "0 < the latest charge's `amount_refunded` < `amount_captured`",
		Skipped:  "no charge, or the charge was not expanded",
		Meaning:  "marked paid, and part of the charge was refunded outside the application (a partial return, a goodwill refund)",
		Action:   "record the refund on the order (or ignore the kind with `--ignore-kinds partially_refunded` if the Dashboard is where you refund); then `findings resolve`",
		check: func(in MoneyInput) (string, bool) {
			c := in.Intent.LatestCharge
			if in.Local != StatusPaid || !c.Expanded() || c.Refunded || c.AmountRefunded <= 0 || c.AmountRefunded >= c.AmountCaptured {
				return "", false
			}
			return fmt.Sprintf("charge %s partially refunded (%d of %d %s)", c.ID, c.AmountRefunded, c.AmountCaptured, upper(c.Currency)), true
		},
	},
	{
		Kind: KindDisputed, Local: "any", Needs: NeedsCharge,
		Compares: "the latest charge's `disputed`",
		Skipped:  "no charge, or the charge was not expanded",
		Meaning:  "the cardholder disputed the charge (a chargeback): the money is withdrawn until the dispute is decided",
		Action:   "answer the dispute in the Dashboard with evidence before its deadline; hold the shipment if it has not left; then `findings resolve`",
		check: func(in MoneyInput) (string, bool) {
			c := in.Intent.LatestCharge
			if !c.Expanded() || !c.Disputed {
				return "", false
			}
			return fmt.Sprintf("charge %s disputed (%d %s captured)", c.ID, c.AmountCaptured, upper(c.Currency)), true
		},
	},
}

func upper(s string) string { return strings.ToUpper(s) }

// MoneyTable returns a copy of the money rules in documentation order.
func MoneyTable() []MoneyRule { return append([]MoneyRule(nil), moneyTable...) }

// MoneyChecks says which money checks can run: the local columns present,
// and the kinds an operator ignores (--ignore-kinds).
type MoneyChecks struct {
	// Amount and Currency are true when payments has the column.
	Amount, Currency bool
	// Ignore lists kinds never evaluated nor recorded.
	Ignore map[Kind]bool
}

// Evaluated lists the money kinds these checks judge for the row's local
// money and the intent: a kind is left out when it is ignored, when its
// local column is absent or the row's value in it is NULL (or empty: NULL
// is not compared, so it is not judged either), or when what it reads is
// missing (no expanded charge). A finding of an evaluated kind that
// ClassifyMoney no longer returns has healed; one of a kind not evaluated is
// left alone.
func (mc MoneyChecks) Evaluated(money LocalMoney, in Intent) []Kind {
	var out []Kind
	for _, r := range moneyTable {
		if mc.Ignore[r.Kind] {
			continue
		}
		switch r.Needs {
		case NeedsAmount:
			if !mc.Amount || money.Amount == nil {
				continue
			}
		case NeedsCurrency:
			if !mc.Currency || money.Currency == "" {
				continue
			}
		case NeedsCharge:
			if in.LatestCharge != nil && !in.LatestCharge.Expanded() {
				continue // an id only: not read, so not judged
			}
		}
		out = append(out, r.Kind)
	}
	return out
}

// ClassifyMoney is the pure money check: from the local status and money
// and the PaymentIntent (with its latest charge) to the money drifts found,
// zero or more, in table order. Every one is needs_review. It is total: any
// input, no panic.
func ClassifyMoney(local LocalStatus, money LocalMoney, intent Intent) []Drift {
	in := MoneyInput{Local: local, Money: money, Intent: intent}
	var out []Drift
	for _, r := range moneyTable {
		if reason, ok := r.check(in); ok {
			out = append(out, Drift{Kind: r.Kind, Reason: reason})
		}
	}
	return out
}

// FormatMoneyTable renders the money rules as a Markdown table: the second
// table of `payrecon classify --table`, copied into the README between
// BeginMoneyTableMarker and EndMoneyTableMarker (a test compares them).
func FormatMoneyTable() string {
	var b strings.Builder
	b.WriteString("| kind | local | compares | not compared when | verdict |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, r := range moneyTable {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Kind, r.Local, r.Compares, r.Skipped, r.Verdict())
	}
	return b.String()
}

// Markers around the generated money table in the README.
const (
	BeginMoneyTableMarker = "<!-- money-table:begin (generated by `payrecon classify --table`; a test checks it) -->"
	EndMoneyTableMarker   = "<!-- money-table:end -->"
)
