package payrecon

import (
	"strings"
	"time"
)

// Finding is one recorded drift (a row of reconciliation_findings) as every
// reader shows it: `payrecon findings`, the console's pages and its CSV
// export.
type Finding struct {
	ID        int64  `json:"id"`
	PaymentID *int64 `json:"payment_id"`
	IntentID  string `json:"stripe_payment_intent_id,omitempty"`
	// OrderID is the payment's order id, when the reader joined it ("" when
	// there is no local row).
	OrderID        string      `json:"order_id,omitempty"`
	Kind           Kind        `json:"kind"`
	Verdict        Verdict     `json:"verdict"`
	LocalStatus    string      `json:"local_status"`
	ExternalStatus string      `json:"external_status,omitempty"`
	Reason         string      `json:"reason,omitempty"`
	RepairCommand  Command     `json:"repair_command,omitempty"`
	RepairOutcome  string      `json:"repair_outcome,omitempty"`
	Job            string      `json:"job,omitempty"`
	DetectedAt     time.Time   `json:"detected_at"`
	ResolvedAt     *time.Time  `json:"resolved_at,omitempty"`
	Resolution     *Resolution `json:"resolution,omitempty"`
	ResolvedBy     string      `json:"resolved_by,omitempty"`
	ResolutionNote string      `json:"resolution_note,omitempty"`
	// Details is what Stripe returned when the finding was recorded (the
	// intent's amount, amount_received, currency, its latest charge, and
	// the local money compared), or nil.
	Details *FindingDetails `json:"details,omitempty"`
}

// Open reports whether the finding is unresolved.
func (f Finding) Open() bool { return f.ResolvedAt == nil }

// AtStake is the money the finding puts at stake (Kind.StakeBasis of its
// details); Known is false when its details carry no such amount.
func (f Finding) AtStake() Stake { return f.Kind.StakeBasis().Of(f.Details) }

// FindingDetails is a finding's details column as the sweep, the webhook
// and the payouts check write it.
type FindingDetails struct {
	Status         string         `json:"status,omitempty"`
	Amount         int64          `json:"amount"`
	AmountReceived int64          `json:"amount_received"`
	Currency       string         `json:"currency"`
	Charge         *ChargeDetails `json:"charge,omitempty"`
	LocalAmount    *int64         `json:"local_amount,omitempty"`
	LocalCurrency  string         `json:"local_currency,omitempty"`
	// Settlement is what the payouts said, on a settlement finding.
	Settlement *SettlementDetails `json:"settlement,omitempty"`
	// CheckoutSession, on a session row's finding, is the Checkout Session
	// read, with its status and payment_status, and SessionIntent the
	// PaymentIntent it names ("" while none), which the row does not
	// record.
	CheckoutSession      string `json:"checkout_session,omitempty"`
	SessionStatus        string `json:"session_status,omitempty"`
	SessionPaymentStatus string `json:"session_payment_status,omitempty"`
	SessionIntent        string `json:"session_payment_intent,omitempty"`
}

// ChargeDetails is the latest charge as a finding keeps it.
type ChargeDetails struct {
	ID             string    `json:"id"`
	AmountCaptured int64     `json:"amount_captured"`
	AmountRefunded int64     `json:"amount_refunded"`
	Refunded       bool      `json:"refunded"`
	Disputed       bool      `json:"disputed"`
	Currency       string    `json:"currency"`
	Created        time.Time `json:"created"`
	ObservedAt     time.Time `json:"observed_at"`
}

// SettlementDetails is what a settlement finding keeps of the payouts: the
// payout of the payment's first charge line, its arrival date, and what
// the payment's lines add up to (minor units).
type SettlementDetails struct {
	PayoutID    string     `json:"payout_id,omitempty"`
	ArrivalDate *time.Time `json:"arrival_date,omitempty"`
	Gross       int64      `json:"gross"`
	Fee         int64      `json:"fee"`
	Net         int64      `json:"net"`
	Kept        int64      `json:"kept"`
	Currency    string     `json:"currency,omitempty"`
	Charges     int        `json:"charge_lines"`
}

// StakeBasis names the amount of a finding's details that is at stake for
// its kind. It is the one rule of "money at stake": a finding's own
// (Finding.AtStake) and the sum per kind the console's overview shows
// (postgres reads the sum with these bases) both follow it.
type StakeBasis string

// The stake bases.
const (
	// StakeIntentAmount: what the PaymentIntent is for (details.amount).
	StakeIntentAmount StakeBasis = "amount"
	// StakeRefunded: what was refunded on the charge
	// (details.charge.amount_refunded).
	StakeRefunded StakeBasis = "amount_refunded"
	// StakeDisputed: what the cardholder disputes, the captured charge
	// (details.charge.amount_captured).
	StakeDisputed StakeBasis = "amount_captured"
)

// StakeBasis says which amount a finding of kind k puts at stake: the
// refunded amount for refunded_externally and partially_refunded, the
// disputed (captured) amount for disputed, the intent's amount otherwise.
// (A refund or dispute webhook's finding records the charge only: its
// intent amount is 0, which is not what is at stake.)
func (k Kind) StakeBasis() StakeBasis {
	switch k {
	case KindRefundedExternally, KindPartiallyRefunded:
		return StakeRefunded
	case KindDisputed:
		return StakeDisputed
	}
	return StakeIntentAmount
}

// StakeKinds returns the kinds, among kinds, whose stake basis is b.
func StakeKinds(b StakeBasis, kinds []Kind) []Kind {
	var out []Kind
	for _, k := range kinds {
		if k.StakeBasis() == b {
			out = append(out, k)
		}
	}
	return out
}

// Stake is an amount at stake, in a currency's minor units.
type Stake struct {
	Amount int64
	// Currency is the ISO code, lower case as Stripe writes it.
	Currency string
	// Known is false when the details carry no such amount (unknown is not
	// zero).
	Known bool
}

// Of reads the basis's amount from a finding's details.
func (b StakeBasis) Of(d *FindingDetails) Stake {
	if d == nil {
		return Stake{}
	}
	switch b {
	case StakeRefunded, StakeDisputed:
		c := d.Charge
		if c == nil {
			return Stake{}
		}
		amount := c.AmountRefunded
		if b == StakeDisputed {
			amount = c.AmountCaptured
		}
		cur := c.Currency
		if cur == "" {
			cur = d.Currency
		}
		return Stake{Amount: amount, Currency: strings.ToLower(cur), Known: cur != ""}
	}
	return Stake{Amount: d.Amount, Currency: strings.ToLower(d.Currency), Known: d.Currency != ""}
}

// Payment is a payments row as the readers show it (`findings show`, the
// console's finding and lookup pages).
type Payment struct {
	ID               int64      `json:"id"`
	OrderID          string     `json:"order_id"`
	IntentID         string     `json:"stripe_payment_intent_id"`
	Status           string     `json:"status"`
	Version          int64      `json:"version"`
	CreatedAt        time.Time  `json:"created_at"`
	UpdatedAt        time.Time  `json:"updated_at"`
	ObservedStatus   string     `json:"observed_external_status,omitempty"`
	LastReconciledAt *time.Time `json:"last_reconciled_at,omitempty"`
}
