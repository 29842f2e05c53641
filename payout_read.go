package payrecon

import "time"

// The read models of the payouts check: what `payrecon payouts list`,
// `payouts show`, `payouts export` and the console show.

// PayoutSummary is a payout as `payouts list`, `payouts show` and the
// console show it: what Stripe said, its lines' totals, and its own check.
type PayoutSummary struct {
	Payout
	// ByCategory and Totals are its lines summed (zero until read).
	ByCategory map[string]CategoryTotal `json:"by_reporting_category,omitempty"`
	Totals     PayoutTotals             `json:"totals"`
	// LinesRead is true once its lines were read in full, at LinesReadAt.
	LinesRead   bool       `json:"lines_read"`
	LinesReadAt *time.Time `json:"lines_read_at,omitempty"`
	// PaidSeenAt is when payrecon first saw it paid.
	PaidSeenAt *time.Time `json:"paid_seen_at,omitempty"`
	ObservedAt time.Time  `json:"observed_at"`
	// Matched counts its lines matched to a local payment; Unmatched those
	// naming a PaymentIntent with no local payment.
	Matched   int `json:"matched_lines"`
	Unmatched int `json:"unmatched_lines"`
	// Problems is its own check (CheckPayout); none when sound.
	Problems []PayoutProblem `json:"problems"`
	// Note says why a payout has no lines (a manual one, one whose
	// reconciliation is in progress).
	Note string `json:"note,omitempty"`
}

// PayoutFilter selects payouts for List. Zero fields do not filter.
type PayoutFilter struct {
	// Account keeps one account's payouts ("" the platform's); nil: all.
	Account *string
	// BeforeCreated and BeforeID continue after the last payout of the
	// previous page (newest first).
	BeforeCreated time.Time
	BeforeID      string
	// Limit bounds the payouts returned; 0 means 50.
	Limit int
}

// PayoutLineRow is one line as `payouts show`, the export and the console
// print it: the balance transaction, its payout's arrival date, and its
// local payment.
type PayoutLineRow struct {
	PayoutLine
	ArrivalDate time.Time `json:"arrival_date"`
	PaymentID   *int64    `json:"payment_id,omitempty"`
	OrderID     string    `json:"order_id,omitempty"`
	// Match is "matched", or why not (see MatchOf).
	Match string `json:"match"`
}

// Why a line is not matched to a local payment.
const (
	MatchMatched        = "matched"
	MatchNoLocalPayment = "no local payment with this PaymentIntent"
	MatchNoIntent       = "charge without a PaymentIntent"
	MatchNotAPayment    = "not a payment (fee, adjustment, transfer)"
	MatchPayout         = "the payout itself"
)

// MatchOf says whether a line is matched to a local payment, and why not.
func MatchOf(l PayoutLine, paymentID *int64) string {
	switch {
	case paymentID != nil:
		return MatchMatched
	case l.OwnLine():
		return MatchPayout
	case l.IntentID != "":
		return MatchNoLocalPayment
	case l.ChargeID != "" || l.SourceType == "charge":
		return MatchNoIntent
	}
	return MatchNotAPayment
}

// PayoutLinesQuery selects lines: one payout's, or those of the payouts
// arriving in [From, To) of one account (nil: all).
type PayoutLinesQuery struct {
	PayoutID string
	From, To time.Time
	Account  *string
}
