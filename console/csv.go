package console

import (
	"encoding/csv"
	"fmt"
	"github.com/payrecon/payrecon"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// csvBatch is how many findings the export reads per query (keyset pages,
// so the export streams whatever the table size).
const csvBatch = 1000

var csvHeader = []string{"id", "detected_at", "kind", "verdict", "state", "payment_id", "order_id",
	"stripe_payment_intent_id", "local_status", "external_status", "amount", "currency", "reason",
	"repair_outcome", "resolved_at", "resolution", "resolved_by", "resolution_note"}

// handleFindingsCSV exports every finding the list's filter selects (the
// cursor is ignored: the export is the whole filter, not one page).
func (c *Console) handleFindingsCSV(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del("after")
	now := c.clock.Now()
	f, err := parseFilter(q, now, csvBatch)
	if err == nil {
		err = c.checkAccountFilter(f)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="payrecon-findings-%s-%s.csv"`, f.State, now.UTC().Format("20060102T150405Z")))
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	n := 0
	for {
		// A large export outlives the server's write timeout: each batch
		// gets its own deadline instead.
		_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
		rows, more, err := c.cfg.Read.Findings(r.Context(), f.Query)
		if err != nil {
			// The header is sent: the only honest signal left is a
			// truncated body, and the log.
			c.log.Error("console: CSV export failed", "rows_written", n, "error", err)
			cw.Flush()
			return
		}
		for _, row := range rows {
			_ = cw.Write(csvRecord(row))
			n++
		}
		cw.Flush()
		if cw.Error() != nil || !more || len(rows) == 0 {
			break
		}
		last := rows[len(rows)-1]
		f.Query.After = &Cursor{DetectedAt: last.DetectedAt, ID: last.ID}
	}
	s := sessionFrom(r.Context())
	c.log.Info("console: findings exported", "operator", s.Operator, "rows", n, "state", f.State)
}

func csvRecord(f payrecon.Finding) []string {
	state := "open"
	resolvedAt := ""
	if !f.Open() {
		state = "resolved"
		resolvedAt = f.ResolvedAt.UTC().Format(time.RFC3339)
	}
	payment, amount, currency, resolution := "", "", "", ""
	if f.PaymentID != nil {
		payment = strconv.FormatInt(*f.PaymentID, 10)
	}
	if st := f.AtStake(); st.Known {
		amount, currency = strconv.FormatInt(st.Amount, 10), st.Currency
	}
	if f.Resolution != nil {
		resolution = string(*f.Resolution)
	}
	rec := []string{strconv.FormatInt(f.ID, 10), f.DetectedAt.UTC().Format(time.RFC3339), string(f.Kind), string(f.Verdict),
		state, payment, f.OrderID, f.IntentID, f.LocalStatus, f.ExternalStatus, amount, currency, f.Reason,
		f.RepairOutcome, resolvedAt, resolution, f.ResolvedBy, f.ResolutionNote}
	for i := range rec {
		rec[i] = csvSafe(rec[i])
	}
	return rec
}

// csvSafe defuses spreadsheet formulas (CSV injection): a cell that starts
// with = + - @, a tab or a carriage return is prefixed with a quote, so a
// note or an order id written by someone else is shown, never evaluated.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
