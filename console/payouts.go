package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// PayoutsReader is what the Payouts page reads: the payouts the payouts
// check recorded, and their lines. postgres.Payouts implements it.
type PayoutsReader interface {
	// List returns payouts newest first.
	List(ctx context.Context, f payrecon.PayoutFilter) ([]payrecon.PayoutSummary, error)
	// Get returns one payout; payrecon.ErrNotFound when it was not read.
	Get(ctx context.Context, id string) (payrecon.PayoutSummary, error)
	// Lines calls fn for every line the query selects, in arrival order.
	Lines(ctx context.Context, q payrecon.PayoutLinesQuery, fn func(payrecon.PayoutLineRow) error) error
}

// payoutsPageSize is the Payouts page's page size.
const payoutsPageSize = 50

// payoutsData is the Payouts page.
type payoutsData struct {
	Off     bool
	Payouts []payrecon.PayoutSummary
	// Next continues after the last payout shown ("" on the last page).
	Next string
	// From and To are the export form's default dates (the last 30 days).
	From, To string
}

// payoutData is one payout's page.
type payoutData struct {
	Payout payrecon.PayoutSummary
	Lines  []payrecon.PayoutLineRow
	// Cap is how many lines the page shows at most; More says there are
	// more (the CSV has them all).
	Cap  int
	More bool
}

// payoutLinesCap bounds the lines one payout's page renders.
const payoutLinesCap = 2000

func (c *Console) handlePayouts(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	d := payoutsData{Off: c.cfg.Payouts == nil}
	now := c.clock.Now().UTC()
	d.From, d.To = now.AddDate(0, 0, -30).Format(time.DateOnly), now.Format(time.DateOnly)
	p.Title, p.Nav, p.Data = "Payouts", "payouts", &d
	if d.Off {
		return "payouts", http.StatusOK, nil
	}
	f := payrecon.PayoutFilter{Limit: payoutsPageSize + 1}
	if before := r.URL.Query().Get("before"); before != "" {
		at, id, ok := strings.Cut(before, "|")
		t, err := time.Parse(time.RFC3339, at)
		if !ok || err != nil || !strings.HasPrefix(id, "po_") {
			return "", 0, badRequest("before: want <created>|po_…")
		}
		f.BeforeCreated, f.BeforeID = t, id
	}
	ps, err := c.cfg.Payouts.List(r.Context(), f)
	if err != nil {
		return "", 0, err
	}
	if len(ps) > payoutsPageSize {
		ps = ps[:payoutsPageSize]
		last := ps[len(ps)-1]
		d.Next = last.Created.UTC().Format(time.RFC3339) + "|" + last.ID
	}
	d.Payouts = ps
	return "payouts", http.StatusOK, nil
}

func (c *Console) handlePayout(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	if c.cfg.Payouts == nil {
		return "", 0, statusError{http.StatusNotFound, "the payouts check is off"}
	}
	id := r.PathValue("id")
	po, err := c.cfg.Payouts.Get(r.Context(), id)
	if errors.Is(err, payrecon.ErrNotFound) {
		return "", 0, statusError{http.StatusNotFound, fmt.Sprintf("no payout %s has been read", payrecon.Quote(id, 40))}
	}
	if err != nil {
		return "", 0, err
	}
	d := &payoutData{Payout: po, Cap: payoutLinesCap}
	errFull := errors.New("full")
	err = c.cfg.Payouts.Lines(r.Context(), payrecon.PayoutLinesQuery{PayoutID: id}, func(l payrecon.PayoutLineRow) error {
		if len(d.Lines) == payoutLinesCap {
			d.More = true
			return errFull
		}
		d.Lines = append(d.Lines, l)
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return "", 0, err
	}
	p.Title, p.Nav, p.Data = "Payout "+id, "payouts", d
	return "payout", http.StatusOK, nil
}

// handlePayoutsCSV exports the lines of the payouts arriving between from
// and to (inclusive dates, UTC), or of one payout (payout=po_…), as the
// CSV `payrecon payouts export` writes, streamed.
func (c *Console) handlePayoutsCSV(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Payouts == nil {
		http.Error(w, "the payouts check is off", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	var lq payrecon.PayoutLinesQuery
	name := ""
	if id := q.Get("payout"); id != "" {
		if !strings.HasPrefix(id, "po_") || len(id) > 255 || strings.ContainsAny(id, "\"\r\n") {
			http.Error(w, "payout: want po_…", http.StatusBadRequest)
			return
		}
		lq.PayoutID, name = id, id
	} else {
		from, err1 := time.Parse(time.DateOnly, q.Get("from"))
		to, err2 := time.Parse(time.DateOnly, q.Get("to"))
		if err1 != nil || err2 != nil || to.Before(from) {
			http.Error(w, "from and to: want two dates, YYYY-MM-DD, from ≤ to", http.StatusBadRequest)
			return
		}
		lq.From, lq.To, name = from, to.AddDate(0, 0, 1), from.Format("20060102")+"-"+to.Format("20060102")
	}
	if acct := q.Get("account"); acct != "" {
		if acct == "platform" {
			acct = ""
		} else if !strings.HasPrefix(acct, "acct_") || len(acct) > 255 || strings.ContainsAny(acct, "\"\r\n") {
			http.Error(w, "account: want acct_… or platform", http.StatusBadRequest)
			return
		}
		lq.Account = &acct
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="payrecon-payout-lines-%s.csv"`, name))
	cw, err := NewPayoutCSV(w)
	if err != nil {
		return
	}
	_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
	err = c.cfg.Payouts.Lines(r.Context(), lq, func(l payrecon.PayoutLineRow) error {
		if err := cw.Write(l); err != nil {
			return err
		}
		if cw.Lines()%1000 == 0 {
			// A large export outlives the server's write timeout: each
			// thousand lines get their own deadline.
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
			return cw.Flush()
		}
		return nil
	})
	if ferr := cw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		// The header is sent: the only honest signal left is a truncated
		// body, and the log.
		c.log.Error("console: payout lines export failed", "lines_written", cw.Lines(), "error", err)
		return
	}
	c.log.Info("console: payout lines exported", "operator", sessionFrom(r.Context()).Operator, "lines", cw.Lines(), "file", name)
}
