package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// SettlementJob is the job recorded on the findings the payouts check opens
// and in resolved_by when it heals them.
const SettlementJob = "payouts"

// Payouts is the settlement store: Stripe's payouts and their lines
// (stripe_payouts, stripe_payout_lines), the settlement check's inputs and
// findings, and what `payrecon payouts` and the console read. It implements
// payrecon.SettlementStore.
type Payouts struct {
	pool *pgxpool.Pool
	// money and accounts are the local columns the store reads
	// (WithMoneyColumns, WithAccountColumn); inputs is
	// settlement_inputs.sql with them.
	money    MoneyColumns
	accounts AccountColumn
	inputs   string
}

var _ payrecon.SettlementStore = (*Payouts)(nil)

// NewPayouts returns the settlement store on pool; it reads no local money
// columns (see WithMoneyColumns).
func NewPayouts(pool *pgxpool.Pool) *Payouts {
	p := &Payouts{pool: pool}
	p.rebuild()
	return p
}

// WithMoneyColumns returns a store on the same pool that reads the local
// amount and currency columns m found (DetectMoneyColumns), so that the
// settled gross is compared with the order's amount.
func (p *Payouts) WithMoneyColumns(m MoneyColumns) *Payouts {
	r := *p
	r.money = m
	r.rebuild()
	return &r
}

// WithAccountColumn returns a store on the same pool that, when payments
// has the connected-account column (DetectAccountColumn), looks for
// unsettled payments only among the rows of the account whose payouts
// are judged: another account's charges are paid out in its own payouts.
func (p *Payouts) WithAccountColumn(a AccountColumn) *Payouts {
	r := *p
	r.accounts = a
	r.rebuild()
	return &r
}

func (p *Payouts) rebuild() {
	p.inputs = accountSQL(moneySQL(queries.Get("settlement_inputs"), p.money), p.accounts)
}

// payoutRow is one element of payouts_save.sql's @payouts.
type payoutRow struct {
	PayoutID             string     `json:"payout_id"`
	Account              string     `json:"account"`
	Amount               int64      `json:"amount"`
	Currency             string     `json:"currency"`
	Status               string     `json:"status"`
	Automatic            bool       `json:"automatic"`
	Method               *string    `json:"method"`
	Created              time.Time  `json:"created"`
	ArrivalDate          *time.Time `json:"arrival_date"`
	ReconciliationStatus string     `json:"reconciliation_status"`
	FailureCode          *string    `json:"failure_code"`
}

// SavePayouts implements payrecon.SettlementStore in one statement.
func (p *Payouts) SavePayouts(ctx context.Context, payouts []payrecon.Payout, now time.Time) ([]string, error) {
	if len(payouts) == 0 {
		return nil, nil
	}
	in := make([]payoutRow, len(payouts))
	for i, x := range payouts {
		in[i] = payoutRow{PayoutID: x.ID, Account: x.Account, Amount: x.Amount, Currency: x.Currency, Status: string(x.Status),
			Automatic: x.Automatic, Method: optional(x.Method), Created: x.Created, ArrivalDate: optionalTime(x.ArrivalDate),
			ReconciliationStatus: x.ReconciliationStatus, FailureCode: optional(x.FailureCode)}
	}
	rows, err := p.pool.Query(ctx, queries.Get("payouts_save"), pgx.StrictNamedArgs{
		"payouts": in, "paid": string(payrecon.PayoutPaid), "completed": payrecon.ReconciliationCompleted, "now": now,
	})
	if err != nil {
		return nil, fmt.Errorf("save %d payouts (%s…): %w", len(payouts), payouts[0].ID, err)
	}
	var (
		toRead []string
		id     string
		read   bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &read}, func() error {
		if read {
			toRead = append(toRead, id)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("save %d payouts (%s…): %w", len(payouts), payouts[0].ID, err)
	}
	return toRead, nil
}

// lineRow is one element of payouts_save_lines.sql's @lines.
type lineRow struct {
	ID                string    `json:"balance_transaction_id"`
	Type              string    `json:"type"`
	ReportingCategory string    `json:"reporting_category"`
	Amount            int64     `json:"amount"`
	Fee               int64     `json:"fee"`
	Net               int64     `json:"net"`
	Currency          string    `json:"currency"`
	Converted         bool      `json:"converted"`
	Created           time.Time `json:"created"`
	SourceID          *string   `json:"source_id"`
	SourceType        *string   `json:"source_type"`
	ChargeID          *string   `json:"charge_id"`
	IntentID          *string   `json:"payment_intent_id"`
}

// SavePayoutLines implements payrecon.SettlementStore: per payout, every
// line, its match, the payout's totals and its "read" mark in one
// statement, so a payout is never marked read with some of its lines
// missing; every payout of the call in one transaction. The transaction
// commits without waiting for its WAL to reach the disk
// (synchronous_commit off): a crash can only lose payouts whose lines
// were read, and those are read again by the next round, since the read
// mark is lost with them.
func (p *Payouts) SavePayoutLines(ctx context.Context, payouts []payrecon.PayoutLines, now time.Time) (int, error) {
	if len(payouts) == 0 {
		return 0, nil
	}
	fresh := 0
	err := pgx.BeginTxFunc(ctx, p.pool, pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL synchronous_commit = off"}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, pl := range payouts {
			po := pl.Payout
			in := make([]lineRow, len(pl.Lines))
			for i, l := range pl.Lines {
				in[i] = lineRow{ID: l.ID, Type: l.Type, ReportingCategory: l.ReportingCategory, Amount: l.Amount, Fee: l.Fee, Net: l.Net,
					Currency: l.Currency, Converted: l.Converted, Created: l.Created, SourceID: optional(l.SourceID),
					SourceType: optional(l.SourceType), ChargeID: optional(l.ChargeID), IntentID: optional(l.IntentID)}
			}
			byCat := payrecon.SumPayoutLines(pl.Lines)
			tot := payrecon.TotalsOf(byCat)
			b.Queue(queries.Get("payouts_save_lines"), pgx.StrictNamedArgs{
				"payout_id": po.ID, "account": po.Account, "lines": in, "totals": byCat, "count": tot.Lines, "net": tot.Net,
				"status": string(po.Status), "now": now,
			}).QueryRow(func(row pgx.Row) error {
				var newLines, written, marked int
				if err := row.Scan(&newLines, &written, &marked); err != nil {
					return fmt.Errorf("save the %d lines of payout %s: %w", len(pl.Lines), po.ID, err)
				}
				if marked != 1 {
					return fmt.Errorf("save the lines of payout %s: the payout is not recorded: %w", po.ID, payrecon.ErrNotFound)
				}
				fresh += newLines
				return nil
			})
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, fmt.Errorf("save the lines of %d payouts (%s…): %w", len(payouts), payouts[0].Payout.ID, err)
	}
	return fresh, nil
}

// SettlementInputs implements payrecon.SettlementStore, streaming the rows
// of one statement (settlement_inputs.sql), in no particular order.
func (p *Payouts) SettlementInputs(ctx context.Context, sc payrecon.SettlementScope, fn func(payrecon.SettlementRow) error) error {
	// A read-only transaction without JIT: over a window of 100,000 lines
	// PostgreSQL's JIT compilation alone took longer than the query.
	tx, err := p.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, BeginQuery: "BEGIN READ ONLY; SET LOCAL jit = off"})
	if err != nil {
		return fmt.Errorf("read the settlement check's inputs: begin: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only: nothing to keep
	rows, err := tx.Query(ctx, p.inputs, pgx.StrictNamedArgs{
		"account": sc.Account, "since": sc.Since, "payout_id": optional(sc.PayoutID), "kinds": kindStrings(payrecon.SettlementKinds),
		"paid": string(payrecon.StatusPaid), "succeeded": string(payrecon.IntentSucceeded), "charge": "charge",
		"settle_after": sc.SettleAfter, "now": sc.Now,
	})
	if err != nil {
		return fmt.Errorf("read the settlement check's inputs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r                           payrecon.SettlementRow
			in                          = &r.Input
			id                          *int64
			order, status, cur, observe *string
			amount                      *int64
			created                     *time.Time
			setCur, payout              *string
			arrival                     *time.Time
			open                        []string
		)
		if err := rows.Scan(&in.IntentID, &id, &order, &status, &amount, &cur, &created, &observe,
			&in.Settled.Charges, &in.Settled.Gross, &in.Settled.Kept, &in.Settled.Fee, &in.Settled.Net,
			&setCur, &in.Settled.Converted, &payout, &arrival, &in.LaterPayout, &open, &r.Unmatched); err != nil {
			return fmt.Errorf("read the settlement check's inputs: %w", err)
		}
		in.Now = sc.Now
		in.Settled.Currency, in.Settled.PayoutID, in.Settled.ArrivalDate = orZero(setCur), orZero(payout), orZero(arrival)
		if id != nil {
			in.Local = &payrecon.SettlementLocal{PaymentID: *id, OrderID: orZero(order), Status: payrecon.LocalStatus(orZero(status)),
				Amount: amount, Currency: orZero(cur), Created: orZero(created), Observed: payrecon.StripeStatus(orZero(observe))}
		}
		for _, k := range open {
			r.Open = append(r.Open, payrecon.Kind(k))
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the settlement check's inputs: %w", err)
	}
	return nil
}

// judgmentRow is one element of settlement_commit.sql's @judgments.
type judgmentRow struct {
	IntentID    string                   `json:"intent_id"`
	PaymentID   *int64                   `json:"payment_id"`
	LocalStatus *string                  `json:"local_status"`
	Drifts      []payrecon.Drift         `json:"drifts"`
	Judged      []payrecon.Kind          `json:"judged"`
	Details     *payrecon.FindingDetails `json:"details"`
}

// settlementDetails builds a settlement finding's details: the settled
// money (with the gross as the amount at stake), or for a payment in no
// payout its own amount.
func settlementDetails(in payrecon.SettlementInput) *payrecon.FindingDetails {
	s := in.Settled
	d := &payrecon.FindingDetails{Amount: s.Gross, Currency: s.Currency, Settlement: &payrecon.SettlementDetails{
		PayoutID: s.PayoutID, ArrivalDate: optionalTime(s.ArrivalDate), Gross: s.Gross, Fee: s.Fee, Net: s.Net, Kept: s.Kept,
		Currency: s.Currency, Charges: s.Charges}}
	if l := in.Local; l != nil {
		d.LocalAmount, d.LocalCurrency = l.Amount, l.Currency
		if s.Charges == 0 && l.Amount != nil {
			d.Amount, d.Currency = *l.Amount, l.Currency
		}
	}
	return d
}

// CommitSettlement implements payrecon.SettlementStore in one statement
// (settlement_commit.sql).
func (p *Payouts) CommitSettlement(ctx context.Context, js []payrecon.SettlementJudgment, now time.Time) (payrecon.SettlementResult, error) {
	res := payrecon.SettlementResult{Opened: map[payrecon.Kind]int{}, Healed: map[payrecon.Kind]int{}}
	if len(js) == 0 {
		return res, nil
	}
	in := make([]judgmentRow, len(js))
	for i, j := range js {
		in[i] = judgmentRow{IntentID: j.Input.IntentID, Drifts: j.Drifts, Judged: j.Judged, Details: settlementDetails(j.Input)}
		if l := j.Input.Local; l != nil {
			id, st := l.PaymentID, string(l.Status)
			in[i].PaymentID, in[i].LocalStatus = &id, &st
		}
		if in[i].Drifts == nil {
			in[i].Drifts = []payrecon.Drift{}
		}
	}
	var opened, healed []string
	err := p.pool.QueryRow(ctx, queries.Get("settlement_commit"), pgx.StrictNamedArgs{
		"judgments": in, "needs_review": string(payrecon.NeedsReview), "no_local_row": string(payrecon.NoLocalRow),
		"healed": string(payrecon.ResolvedHealed), "local_row_appeared": string(payrecon.ResolvedLocalRowAppeared),
		"job": SettlementJob, "now": now,
	}).Scan(&opened, &healed, &res.Matched)
	if err != nil {
		return res, fmt.Errorf("write the settlement findings of %d PaymentIntents (%s…): %w", len(js), js[0].Input.IntentID, err)
	}
	countKinds(res.Opened, opened)
	countKinds(res.Healed, healed)
	return res, nil
}

// List returns payouts newest first.
func (p *Payouts) List(ctx context.Context, f payrecon.PayoutFilter) ([]payrecon.PayoutSummary, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	return p.list(ctx, pgx.StrictNamedArgs{"account": f.Account, "payout_id": nil, "before_created": optionalTime(f.BeforeCreated),
		"before_id": optional(f.BeforeID), "limit": limit})
}

// Get returns one payout; payrecon.ErrNotFound when payrecon has not read it.
func (p *Payouts) Get(ctx context.Context, id string) (payrecon.PayoutSummary, error) {
	out, err := p.list(ctx, pgx.StrictNamedArgs{"account": nil, "payout_id": id, "before_created": nil, "before_id": nil, "limit": 1})
	if err != nil {
		return payrecon.PayoutSummary{}, err
	}
	if len(out) == 0 {
		return payrecon.PayoutSummary{}, fmt.Errorf("payout %s: %w (not read yet: run `payrecon payouts --once`)", payrecon.Quote(id, 40), payrecon.ErrNotFound)
	}
	return out[0], nil
}

func (p *Payouts) list(ctx context.Context, args pgx.StrictNamedArgs) ([]payrecon.PayoutSummary, error) {
	rows, err := p.pool.Query(ctx, queries.Get("payouts_list"), args)
	if err != nil {
		return nil, fmt.Errorf("list payouts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (payrecon.PayoutSummary, error) {
		var (
			s         payrecon.PayoutSummary
			status    string
			arrival   *time.Time
			totals    []byte
			count     *int
			net       *int64
			readAt    *time.Time
			paidSeen  *time.Time
			matched   int
			unmatched int
		)
		err := row.Scan(&s.ID, &s.Account, &s.Amount, &s.Currency, &status, &s.Automatic, &s.Method, &s.Created, &arrival,
			&s.ReconciliationStatus, &s.FailureCode, &totals, &count, &net, &readAt, &paidSeen, &s.ObservedAt, &matched, &unmatched)
		if err != nil {
			return s, err
		}
		s.Status, s.ArrivalDate, s.LinesReadAt, s.PaidSeenAt = payrecon.PayoutStatus(status), orZero(arrival), readAt, paidSeen
		s.LinesRead, s.Matched, s.Unmatched = readAt != nil, matched, unmatched
		if len(totals) > 0 {
			if err := json.Unmarshal(totals, &s.ByCategory); err != nil {
				return s, fmt.Errorf("payout %s: totals: %w", s.ID, err)
			}
			s.Totals = payrecon.TotalsOf(s.ByCategory)
		}
		s.Problems = payrecon.CheckPayout(s.Payout, s.LinesRead, s.Totals, paidSeen != nil)
		if s.Problems == nil {
			s.Problems = []payrecon.PayoutProblem{}
		}
		switch {
		case !s.Automatic:
			s.Note = payrecon.ManualPayoutNote
		case s.ReconciliationStatus != payrecon.ReconciliationCompleted:
			s.Note = "its reconciliation is " + s.ReconciliationStatus + " at Stripe: its lines are read once it completes"
		}
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list payouts: %w", err)
	}
	return out, nil
}

// Lines calls fn for every line the query selects, in arrival order, as the
// rows come from one statement (the export streams them; nothing is held).
func (p *Payouts) Lines(ctx context.Context, q payrecon.PayoutLinesQuery, fn func(payrecon.PayoutLineRow) error) error {
	rows, err := p.pool.Query(ctx, queries.Get("payouts_lines"), pgx.StrictNamedArgs{
		"payout_id": optional(q.PayoutID), "from": q.From, "to": q.To, "account": q.Account,
	})
	if err != nil {
		return fmt.Errorf("read payout lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r payrecon.PayoutLineRow
		var arrival *time.Time
		if err := rows.Scan(&r.ID, &r.PayoutID, &r.Account, &arrival, &r.Type, &r.ReportingCategory, &r.Amount, &r.Fee, &r.Net,
			&r.Currency, &r.Converted, &r.Created, &r.SourceID, &r.SourceType, &r.ChargeID, &r.IntentID, &r.PaymentID, &r.OrderID); err != nil {
			return fmt.Errorf("read payout lines: %w", err)
		}
		r.ArrivalDate = orZero(arrival)
		r.Match = payrecon.MatchOf(r.PayoutLine, r.PaymentID)
		if err := fn(r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read payout lines: %w", err)
	}
	return nil
}
