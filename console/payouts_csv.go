package console

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/payrecon/payrecon"
)

// PayoutCSVHeader is the header of the payout lines CSV: one line per
// balance transaction, what an accountant asks for. `payrecon payouts
// export` and the console's Payouts page write the same file.
var PayoutCSVHeader = []string{"payout_id", "arrival_date", "balance_transaction_id", "type", "reporting_category",
	"gross", "fee", "net", "currency", "payment_intent_id", "payment_id", "order_id", "match"}

// PayoutCSV writes payout lines as CSV, text cells a spreadsheet would take
// for a formula defused (prefixed with '), amounts as plain integers in
// minor units. It buffers: call Flush.
type PayoutCSV struct {
	cw *csv.Writer
	n  int
}

// NewPayoutCSV returns a writer on w and writes the header.
func NewPayoutCSV(w io.Writer) (*PayoutCSV, error) {
	p := &PayoutCSV{cw: csv.NewWriter(w)}
	if err := p.cw.Write(PayoutCSVHeader); err != nil {
		return nil, fmt.Errorf("write the CSV header: %w", err)
	}
	return p, nil
}

// Write writes one line.
func (p *PayoutCSV) Write(r payrecon.PayoutLineRow) error {
	payment := ""
	if r.PaymentID != nil {
		payment = strconv.FormatInt(*r.PaymentID, 10)
	}
	arrival := ""
	if !r.ArrivalDate.IsZero() {
		arrival = r.ArrivalDate.UTC().Format(time.DateOnly)
	}
	// Text from outside (ids, the order id) is defused; the amounts are
	// payrecon's own integers, written as numbers (a refund's -2000 stays
	// a number a spreadsheet adds up).
	s := csvSafe
	rec := []string{s(r.PayoutID), arrival, s(r.ID), s(r.Type), s(r.ReportingCategory), strconv.FormatInt(r.Amount, 10),
		strconv.FormatInt(r.Fee, 10), strconv.FormatInt(r.Net, 10), s(r.Currency), s(r.IntentID), payment, s(r.OrderID), r.Match}
	if err := p.cw.Write(rec); err != nil {
		return fmt.Errorf("write CSV line %s: %w", r.ID, err)
	}
	p.n++
	return nil
}

// Lines returns how many lines were written.
func (p *PayoutCSV) Lines() int { return p.n }

// Flush writes what is buffered and returns the first error of any write.
func (p *PayoutCSV) Flush() error {
	p.cw.Flush()
	if err := p.cw.Error(); err != nil {
		return fmt.Errorf("write CSV: %w", err)
	}
	return nil
}
