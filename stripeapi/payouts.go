package stripeapi

import (
	"context"
	"fmt"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// Operation names of the payout reads (the "op" label of the metrics).
const (
	opPayouts     = "payouts"
	opPayoutLines = "balance_transactions"
)

// expandSource brings each balance transaction's source (the charge, the
// refund, the dispute) in the same request, so that a line names its
// PaymentIntent without a request of its own.
const expandSource = "data.source"

var _ payrecon.PayoutSource = (*Gateway)(nil)

// ListPayouts reads exactly one page of payouts (GET /v1/payouts), newest
// first, created ≥ q.CreatedGTE (zero: unbounded), continuing after
// q.StartingAfter, with the Stripe-Account header of q.Account (none for
// the platform). A Limit outside 1..100 means 100. Reported as op
// "payouts".
func (g *Gateway) ListPayouts(ctx context.Context, q payrecon.PayoutQuery) (payrecon.PayoutPage, error) {
	var page payrecon.PayoutPage
	err := g.do(ctx, opPayouts, func(ctx context.Context) error {
		params := &stripe.PayoutListParams{}
		params.Single = true // one request, one page: the caller paginates
		params.Limit = stripe.Int64(pageLimit(q.Limit))
		if q.StartingAfter != "" {
			params.StartingAfter = stripe.String(q.StartingAfter)
		}
		if !q.CreatedGTE.IsZero() {
			params.CreatedRange = &stripe.RangeQueryParams{GreaterThanOrEqual: q.CreatedGTE.Unix()}
		}
		if q.Account != "" {
			params.SetStripeAccount(q.Account)
		}
		list := g.sc.V1Payouts.List(ctx, params)
		if err := list.Err(); err != nil {
			return err
		}
		data := list.Data()
		page = payrecon.PayoutPage{Payouts: make([]payrecon.Payout, 0, len(data)), HasMore: list.Meta().HasMore}
		for _, p := range data {
			page.Payouts = append(page.Payouts, toPayout(p, q.Account))
		}
		return nil
	})
	if err != nil {
		return payrecon.PayoutPage{}, fmt.Errorf("list payouts of %s (after %q): %w", accountName(q.Account), q.StartingAfter, err)
	}
	return page, nil
}

// RetrievePayout reads one payout (GET /v1/payouts/{id}) under account's
// Stripe-Account header; ErrNotFound when Stripe has none.
func (g *Gateway) RetrievePayout(ctx context.Context, account, id string) (payrecon.Payout, error) {
	if id == "" {
		return payrecon.Payout{}, fmt.Errorf("retrieve payout: empty id: %w", payrecon.ErrNotFound)
	}
	var p *stripe.Payout
	err := g.do(ctx, opPayouts, func(ctx context.Context) error {
		params := &stripe.PayoutRetrieveParams{}
		if account != "" {
			params.SetStripeAccount(account)
		}
		var err error
		p, err = g.sc.V1Payouts.Retrieve(ctx, id, params)
		return err
	})
	if err != nil {
		return payrecon.Payout{}, fmt.Errorf("retrieve payout %q of %s: %w", id, accountName(account), err)
	}
	return toPayout(p, account), nil
}

// ListPayoutLines reads exactly one page of an automatic payout's balance
// transactions (GET /v1/balance_transactions?payout=po_…&expand[]=data.source),
// newest first, continuing after q.StartingAfter. Each line names the
// charge and PaymentIntent its source is about. A source Stripe sent as an
// id although it was asked to expand it (a proxy dropped the parameter)
// is a *payrecon.ConfigError: the line could not be matched, and reading on
// would take every payment for unsettled. Reported as op
// "balance_transactions".
func (g *Gateway) ListPayoutLines(ctx context.Context, q payrecon.PayoutLineQuery) (payrecon.PayoutLinePage, error) {
	if q.PayoutID == "" {
		return payrecon.PayoutLinePage{}, &payrecon.ConfigError{Cause: "list payout lines: no payout id"}
	}
	var (
		page       payrecon.PayoutLinePage
		unexpanded *stripe.BalanceTransaction
	)
	err := g.do(ctx, opPayoutLines, func(ctx context.Context) error {
		params := &stripe.BalanceTransactionListParams{Payout: stripe.String(q.PayoutID)}
		params.Single = true
		params.Limit = stripe.Int64(pageLimit(q.Limit))
		params.AddExpand(expandSource)
		if q.StartingAfter != "" {
			params.StartingAfter = stripe.String(q.StartingAfter)
		}
		if q.Account != "" {
			params.SetStripeAccount(q.Account)
		}
		list := g.sc.V1BalanceTransactions.List(ctx, params)
		if err := list.Err(); err != nil {
			return err
		}
		data := list.Data()
		page = payrecon.PayoutLinePage{Lines: make([]payrecon.PayoutLine, 0, len(data)), HasMore: list.Meta().HasMore}
		unexpanded = nil
		for _, bt := range data {
			l, ok := toLine(bt, q.PayoutID, q.Account)
			if !ok && unexpanded == nil {
				unexpanded = bt
			}
			page.Lines = append(page.Lines, l)
		}
		return nil
	})
	if err == nil && unexpanded != nil {
		// An answer, but not the one asked for: no retry makes it one.
		err = &payrecon.ConfigError{Cause: fmt.Sprintf("balance transaction %s: its source %s came back unexpanded although expand[]=%s was sent: check STRIPE_API_BASE (a proxy that drops parameters?)",
			payrecon.Quote(unexpanded.ID, 40), payrecon.Quote(unexpanded.Source.ID, 40), expandSource)}
	}
	if err != nil {
		return payrecon.PayoutLinePage{}, fmt.Errorf("list the lines of payout %s of %s (after %q): %w", q.PayoutID, accountName(q.Account), q.StartingAfter, err)
	}
	return page, nil
}

func accountName(account string) string {
	if account == "" {
		return "the platform"
	}
	return account
}

func toPayout(p *stripe.Payout, account string) payrecon.Payout {
	return payrecon.Payout{
		ID:                   p.ID,
		Account:              account,
		Amount:               p.Amount,
		Currency:             string(p.Currency),
		Status:               payrecon.PayoutStatus(p.Status),
		Automatic:            p.Automatic,
		Method:               string(p.Method),
		Created:              unixTime(p.Created),
		ArrivalDate:          unixTime(p.ArrivalDate),
		ReconciliationStatus: string(p.ReconciliationStatus),
		FailureCode:          string(p.FailureCode),
	}
}

// toLine maps a balance transaction; ok is false when its source came as
// an id only (not expanded).
func toLine(bt *stripe.BalanceTransaction, payout, account string) (payrecon.PayoutLine, bool) {
	l := payrecon.PayoutLine{
		ID: bt.ID, PayoutID: payout, Account: account,
		Type: string(bt.Type), ReportingCategory: string(bt.ReportingCategory),
		Amount: bt.Amount, Fee: bt.Fee, Net: bt.Net, Currency: string(bt.Currency),
		Converted: bt.ExchangeRate != 0, Created: unixTime(bt.Created),
	}
	src := bt.Source
	if src == nil || src.ID == "" {
		return l, true
	}
	l.SourceID, l.SourceType = src.ID, string(src.Type)
	if src.Type == "" {
		return l, false
	}
	var charge *stripe.Charge
	var intent *stripe.PaymentIntent
	switch {
	case src.Charge != nil:
		charge, intent = src.Charge, src.Charge.PaymentIntent
	case src.Refund != nil:
		charge, intent = src.Refund.Charge, src.Refund.PaymentIntent
	case src.Dispute != nil:
		charge, intent = src.Dispute.Charge, src.Dispute.PaymentIntent
	}
	if charge != nil {
		l.ChargeID = charge.ID
	}
	if intent != nil {
		l.IntentID = intent.ID
	}
	return l, true
}

// CheckPayoutAccess makes the two requests the payouts check needs, one of
// each kind, at start-up: GET /v1/payouts?limit=1 (Payouts: Read) and GET
// /v1/balance_transactions?limit=1 (Balance: Read), under account's
// Stripe-Account header. A key without one of them gets a
// *payrecon.ConfigError naming it in the Dashboard's words; the caller turns
// the payouts check off (the rest of payrecon needs neither).
func (g *Gateway) CheckPayoutAccess(ctx context.Context, account string) error {
	if _, err := g.ListPayouts(ctx, payrecon.PayoutQuery{Account: account, Limit: 1}); err != nil {
		return fmt.Errorf("check Stripe access to payouts: %w", err)
	}
	err := g.do(ctx, opPayoutLines, func(ctx context.Context) error {
		params := &stripe.BalanceTransactionListParams{}
		params.Single = true
		params.Limit = stripe.Int64(1)
		if account != "" {
			params.SetStripeAccount(account)
		}
		return g.sc.V1BalanceTransactions.List(ctx, params).Err()
	})
	if err != nil {
		return fmt.Errorf("check Stripe access to balance transactions: %w", err)
	}
	return nil
}
