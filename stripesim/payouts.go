package stripesim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// Endpoints of payouts and balance transactions (Stats, per-endpoint
// rate limits).
const (
	EndpointListPayouts             = "list_payouts"
	EndpointRetrievePayout          = "retrieve_payout"
	EndpointListBalanceTransactions = "list_balance_transactions"
)

// Restricted-key permissions of payouts and balance transactions, as
// Stripe names them (the Dashboard: "Payouts: Read", "Balance: Read").
const (
	PermissionPayoutRead  = "rak_payout_read"
	PermissionBalanceRead = "rak_balance_read"
)

// Payout event types the simulator records.
const (
	EventPayoutCreated                 = "payout.created"
	EventPayoutPaid                    = payrecon.EventPayoutPaid
	EventPayoutFailed                  = payrecon.EventPayoutFailed
	EventPayoutCanceled                = payrecon.EventPayoutCanceled
	EventPayoutReconciliationCompleted = payrecon.EventPayoutReconciliationCompleted
)

// Errors of the payout methods.
var (
	// ErrNoSuchPayout: no payout with that id.
	ErrNoSuchPayout = errors.New("stripesim: no such payout")
	// ErrAlreadySettled: a charge already paid out in another payout.
	ErrAlreadySettled = errors.New("stripesim: charge already settled in a payout")
	// ErrPayoutState: a status change Stripe does not make (a manual
	// payout's reconciliation, a duplicate payout id).
	ErrPayoutState = errors.New("stripesim: payout cannot do that")
)

// DisputeFee is what Stripe takes for a dispute (minor units), on the
// dispute's balance transaction.
const DisputeFee = 1500

// FeeFor is the simulator's processing fee for a charge of amount: 2.9 %
// plus 30, rounded down, as on Stripe's standard card pricing in USD.
func FeeFor(amount int64) int64 { return amount*29/1000 + 30 }

// PayoutSpec describes a payout to create. Zero fields get defaults.
type PayoutSpec struct {
	// ID defaults to a generated "po_…".
	ID string
	// Currency defaults to "usd".
	Currency string
	// Created defaults to the simulator's clock; ArrivalDate to two days
	// after Created.
	Created, ArrivalDate time.Time
	// Status defaults to paid.
	Status payrecon.PayoutStatus
	// Manual makes a payout made by hand: no lines (Stripe cannot itemise
	// it), an amount of Amount (default 1000), reconciliation
	// not_applicable.
	Manual bool
	// Amount is a manual payout's amount; for an automatic one it is the
	// sum of its lines' net, plus AmountDelta.
	Amount int64
	// AmountDelta makes an automatic payout's amount differ from what its
	// lines add up to: a payout that does not reconcile.
	AmountDelta int64
	// InProgress leaves an automatic payout's reconciliation in_progress:
	// its lines cannot be listed yet (CompletePayoutReconciliation).
	InProgress bool
	// Intents are the PaymentIntents whose charges the payout settles,
	// each with what its charge carries now: the charge (gross, fee, net),
	// a refund line for what was refunded, and a dispute adjustment (the
	// amount disputed and DisputeFee) for a disputed charge.
	Intents []string
	// Fees are extra fee lines (stripe_fee), each taking that much.
	Fees []int64
	// Adjustments are other adjustment lines (other_adjustment), signed.
	Adjustments []int64
	// FailureCode is a failed payout's failure_code (default
	// "account_closed").
	FailureCode string
}

// Payout is a payout as tests see it.
type Payout struct {
	ID                   string
	Amount               int64
	Currency             string
	Status               payrecon.PayoutStatus
	Automatic            bool
	Created, ArrivalDate time.Time
	ReconciliationStatus string
	// Lines counts its balance transactions, its own included.
	Lines int
}

// BalanceTransaction is one line of a payout as tests see it.
type BalanceTransaction struct {
	ID, PayoutID, Type, ReportingCategory string
	Amount, Fee, Net                      int64
	Currency                              string
	SourceID                              string
	// IntentID is the PaymentIntent of the line's charge, refund or dispute.
	IntentID string
}

// payoutRec is one stored payout.
type payoutRec struct {
	id          string
	amount      int64
	currency    string
	status      payrecon.PayoutStatus
	automatic   bool
	created     int64
	arrival     int64
	recon       string
	failureCode string
	lines       []*btRec // newest first
}

// btRec is one stored balance transaction.
type btRec struct {
	id, typ, category string
	amount, fee, net  int64
	currency          string
	created           int64
	sourceID          string
	intentID          string
	source            json.RawMessage // the expanded source, or JSON null
	payout            *payoutRec
	pos               int // index in payout.lines
}

// payoutStore holds the payouts, newest first, and every balance
// transaction by id. Server guards it with its state lock.
type payoutStore struct {
	order   []*payoutRec
	byID    map[string]*payoutRec
	lines   map[string]*btRec
	settled map[string]string // charge id → payout id
}

func newPayoutStore() *payoutStore {
	return &payoutStore{byID: map[string]*payoutRec{}, lines: map[string]*btRec{}, settled: map[string]string{}}
}

// cmpPayout orders payouts newest first, id descending as the tie-break.
func cmpPayout(a, b *payoutRec) int {
	if c := cmp.Compare(b.created, a.created); c != 0 {
		return c
	}
	return cmp.Compare(b.id, a.id)
}

func (p *payoutRec) payout() Payout {
	return Payout{ID: p.id, Amount: p.amount, Currency: p.currency, Status: p.status, Automatic: p.automatic,
		Created: time.Unix(p.created, 0).UTC(), ArrivalDate: time.Unix(p.arrival, 0).UTC(), ReconciliationStatus: p.recon, Lines: len(p.lines)}
}

// CreatePayout creates a payout as Stripe's payout schedule (or a person,
// for a manual one) does, with its balance transactions, and records
// payout.created, then payout.paid for a paid payout (payout.failed or
// payout.canceled likewise) and payout.reconciliation_completed for an
// automatic one whose reconciliation completed. It fails with
// ErrNoSuchIntent, ErrNoCharge (an intent that has not succeeded),
// ErrAlreadySettled, ErrPayoutState (an id that exists) and
// ErrInvalidAmount (a negative fee or manual amount).
func (s *Server) CreatePayout(spec PayoutSpec) (Payout, error) {
	now := s.clock.Now()
	created := cmp.Or(spec.Created, now)
	arrival := spec.ArrivalDate
	if arrival.IsZero() {
		arrival = created.Add(48 * time.Hour)
	}
	if spec.Amount < 0 {
		return Payout{}, fmt.Errorf("create payout: amount %d: %w", spec.Amount, ErrInvalidAmount)
	}
	p := &payoutRec{
		id: spec.ID, currency: strings.ToLower(cmp.Or(spec.Currency, "usd")), status: cmp.Or(spec.Status, payrecon.PayoutPaid),
		automatic: !spec.Manual, created: created.Unix(), arrival: arrival.Unix(), recon: "not_applicable",
	}
	if p.id == "" {
		p.id = s.newID("po_")
	}
	if p.status == payrecon.PayoutFailed {
		p.failureCode = cmp.Or(spec.FailureCode, "account_closed")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.payouts
	if _, dup := ps.byID[p.id]; dup {
		return Payout{}, fmt.Errorf("create payout %q: the id exists: %w", p.id, ErrPayoutState)
	}
	if spec.Manual {
		p.amount = cmp.Or(spec.Amount, 1000)
	} else {
		p.recon = ReconciliationFor(spec.InProgress)
		lines, err := s.payoutLines(p, spec)
		if err != nil {
			return Payout{}, err
		}
		var net int64
		for _, l := range lines {
			net += l.net
		}
		p.amount = net + spec.AmountDelta
		own := &btRec{id: "txn_" + strings.TrimPrefix(p.id, "po_"), typ: "payout", category: "payout",
			amount: -p.amount, net: -p.amount, currency: p.currency, created: p.created, sourceID: p.id}
		lines = append(lines, own)
		// Newest first, as Stripe lists them; the payout's own line is the
		// newest (it is made when the payout is).
		slices.SortStableFunc(lines, func(a, b *btRec) int {
			if c := cmp.Compare(b.created, a.created); c != 0 {
				return c
			}
			return cmp.Compare(b.id, a.id)
		})
		for i, l := range lines {
			l.payout, l.pos = p, i
			ps.lines[l.id] = l
			if l.typ == "charge" {
				ps.settled[l.sourceID] = p.id
			}
		}
		p.lines = lines
		own.source = s.encodeObject(p.json(), "")
	}
	ps.byID[p.id] = p
	ps.order = slices.Insert(ps.order, func() int {
		i, _ := slices.BinarySearchFunc(ps.order, p, cmpPayout)
		return i
	}(), p)
	s.recordPayoutEvent(EventPayoutCreated, p, nil, now)
	switch p.status {
	case payrecon.PayoutPaid, payrecon.PayoutFailed, payrecon.PayoutCanceled:
		s.recordPayoutEvent("payout."+string(p.status), p, nil, now)
	}
	if p.recon == payrecon.ReconciliationCompleted {
		s.recordPayoutEvent(EventPayoutReconciliationCompleted, p, nil, now)
	}
	return p.payout(), nil
}

// ReconciliationFor is the reconciliation_status of an automatic payout.
func ReconciliationFor(inProgress bool) string {
	if inProgress {
		return "in_progress"
	}
	return payrecon.ReconciliationCompleted
}

// payoutLines builds an automatic payout's lines (not its own); s.mu must
// be held.
func (s *Server) payoutLines(p *payoutRec, spec PayoutSpec) ([]*btRec, error) {
	var lines []*btRec
	seen := map[string]bool{}
	for _, id := range spec.Intents {
		r, err := s.charged(id)
		if err != nil {
			return nil, fmt.Errorf("create payout %s: %w", p.id, err)
		}
		ch := r.chargeID()
		if by, ok := s.payouts.settled[ch]; ok || seen[ch] {
			return nil, fmt.Errorf("create payout %s: charge %s (in %s): %w", p.id, ch, cmp.Or(by, p.id), ErrAlreadySettled)
		}
		seen[ch] = true
		suffix := strings.TrimPrefix(r.id, "pi_")
		cj := r.chargeJSON()
		fee := FeeFor(r.received)
		lines = append(lines, &btRec{id: "txn_ch" + suffix, typ: "charge", category: "charge", amount: r.received, fee: fee,
			net: r.received - fee, currency: r.currency, created: cj.Created, sourceID: ch, intentID: r.id, source: s.encodeObject(cj, r.id)})
		if r.refunded > 0 {
			re := refundJSON{ID: "re_" + suffix, Object: "refund", Amount: r.refunded, Charge: ch, Created: cj.Created + 1,
				Currency: r.currency, Metadata: map[string]string{}, PaymentIntent: r.id, Status: "succeeded"}
			lines = append(lines, &btRec{id: "txn_re" + suffix, typ: "refund", category: "refund", amount: -r.refunded,
				net: -r.refunded, currency: r.currency, created: re.Created, sourceID: re.ID, intentID: r.id, source: s.encodeObject(re, r.id)})
		}
		if r.disputed {
			amt := r.received - r.refunded
			dp := disputeJSON{ID: "dp_" + suffix, Object: "dispute", Amount: amt, BalanceTransactions: []string{"txn_dp" + suffix},
				Charge: ch, Created: cj.Created + 2, Currency: r.currency, Metadata: map[string]string{}, PaymentIntent: r.id,
				Reason: "general", Status: "needs_response"}
			lines = append(lines, &btRec{id: "txn_dp" + suffix, typ: "adjustment", category: "dispute", amount: -amt, fee: DisputeFee,
				net: -amt - DisputeFee, currency: r.currency, created: dp.Created, sourceID: dp.ID, intentID: r.id, source: s.encodeObject(dp, r.id)})
		}
	}
	for i, f := range spec.Fees {
		if f < 0 {
			return nil, fmt.Errorf("create payout %s: fee %d: %w", p.id, f, ErrInvalidAmount)
		}
		lines = append(lines, &btRec{id: fmt.Sprintf("txn_fee%s%03d", strings.TrimPrefix(p.id, "po_"), i), typ: "stripe_fee", category: "fee",
			amount: -f, net: -f, currency: p.currency, created: p.created - 1, source: json.RawMessage("null")})
	}
	for i, a := range spec.Adjustments {
		lines = append(lines, &btRec{id: fmt.Sprintf("txn_adj%s%03d", strings.TrimPrefix(p.id, "po_"), i), typ: "adjustment", category: "other_adjustment",
			amount: a, net: a, currency: p.currency, created: p.created - 1, source: json.RawMessage("null")})
	}
	return lines, nil
}

// SetPayoutStatus moves payout id to status (a paid payout that fails, a
// pending one canceled, …) and records payout.paid, payout.failed or
// payout.canceled (payout.updated for pending and in_transit), returning
// the event's id. It fails with ErrNoSuchPayout.
func (s *Server) SetPayoutStatus(id string, status payrecon.PayoutStatus) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payouts.byID[id]
	if !ok {
		return "", fmt.Errorf("set status of payout %q: %w", id, ErrNoSuchPayout)
	}
	old := p.status
	p.status = status
	if status == payrecon.PayoutFailed && p.failureCode == "" {
		p.failureCode = "account_closed"
	}
	typ := "payout.updated"
	switch status {
	case payrecon.PayoutPaid, payrecon.PayoutFailed, payrecon.PayoutCanceled:
		typ = "payout." + string(status)
	}
	return s.recordPayoutEvent(typ, p, map[string]any{"status": string(old)}, now), nil
}

// CompletePayoutReconciliation completes the reconciliation of automatic
// payout id (its lines can be listed from then on) and records
// payout.reconciliation_completed. It fails with ErrNoSuchPayout, and with
// ErrPayoutState for a manual payout.
func (s *Server) CompletePayoutReconciliation(id string) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.payouts.byID[id]
	if !ok {
		return "", fmt.Errorf("complete reconciliation of payout %q: %w", id, ErrNoSuchPayout)
	}
	if !p.automatic {
		return "", fmt.Errorf("complete reconciliation of manual payout %q: %w", id, ErrPayoutState)
	}
	old := p.recon
	p.recon = payrecon.ReconciliationCompleted
	return s.recordPayoutEvent(EventPayoutReconciliationCompleted, p, map[string]any{"reconciliation_status": old}, now), nil
}

// GetPayout returns payout id.
func (s *Server) GetPayout(id string) (Payout, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.payouts.byID[id]
	if !ok {
		return Payout{}, false
	}
	return p.payout(), true
}

// PayoutLines returns the balance transactions of payout id, newest first,
// its own included.
func (s *Server) PayoutLines(id string) []BalanceTransaction {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.payouts.byID[id]
	if !ok {
		return nil
	}
	out := make([]BalanceTransaction, len(p.lines))
	for i, l := range p.lines {
		out[i] = BalanceTransaction{ID: l.id, PayoutID: p.id, Type: l.typ, ReportingCategory: l.category,
			Amount: l.amount, Fee: l.fee, Net: l.net, Currency: l.currency, SourceID: l.sourceID, IntentID: l.intentID}
	}
	return out
}

// recordPayoutEvent records an event about payout p, whose data.object is
// the payout as it is now; s.mu must be held.
func (s *Server) recordPayoutEvent(typ string, p *payoutRec, previous map[string]any, now time.Time) string {
	l := s.events
	l.seq++
	e := &eventRec{seq: l.seq, id: s.newID("evt_"), typ: typ, created: now.Unix(), object: s.encodeObject(p.json(), "")}
	if previous != nil {
		e.previous = s.encodeObject(previous, "")
	}
	l.list = slices.Insert(l.list, l.pos(e), e)
	l.byID[e.id] = e
	return e.id
}

// payoutJSON is a Payout as Stripe renders it.
type payoutJSON struct {
	ID                        string            `json:"id"`
	Object                    string            `json:"object"`
	Amount                    int64             `json:"amount"`
	ArrivalDate               int64             `json:"arrival_date"`
	Automatic                 bool              `json:"automatic"`
	BalanceTransaction        *string           `json:"balance_transaction"`
	Created                   int64             `json:"created"`
	Currency                  string            `json:"currency"`
	Description               *string           `json:"description"`
	Destination               string            `json:"destination"`
	FailureBalanceTransaction *string           `json:"failure_balance_transaction"`
	FailureCode               *string           `json:"failure_code"`
	FailureMessage            *string           `json:"failure_message"`
	Livemode                  bool              `json:"livemode"`
	Metadata                  map[string]string `json:"metadata"`
	Method                    string            `json:"method"`
	ReconciliationStatus      string            `json:"reconciliation_status"`
	SourceType                string            `json:"source_type"`
	StatementDescriptor       *string           `json:"statement_descriptor"`
	Status                    string            `json:"status"`
	Type                      string            `json:"type"`
}

func (p *payoutRec) json() payoutJSON {
	j := payoutJSON{ID: p.id, Object: "payout", Amount: p.amount, ArrivalDate: p.arrival, Automatic: p.automatic,
		Created: p.created, Currency: p.currency, Destination: "ba_sim", Metadata: map[string]string{}, Method: "standard",
		ReconciliationStatus: p.recon, SourceType: "card", Status: string(p.status), Type: "bank_account"}
	if p.automatic {
		own := "txn_" + strings.TrimPrefix(p.id, "po_")
		j.BalanceTransaction = &own
	}
	if p.failureCode != "" && p.status == payrecon.PayoutFailed {
		code, msg := p.failureCode, "The bank account has been closed."
		j.FailureCode, j.FailureMessage = &code, &msg
	}
	return j
}

// refundJSON is a Refund as Stripe renders it.
type refundJSON struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Charge        string            `json:"charge"`
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent string            `json:"payment_intent"`
	Status        string            `json:"status"`
}

// btJSON is a BalanceTransaction as Stripe renders it.
type btJSON struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Amount            int64           `json:"amount"`
	AvailableOn       int64           `json:"available_on"`
	Created           int64           `json:"created"`
	Currency          string          `json:"currency"`
	Description       *string         `json:"description"`
	ExchangeRate      *float64        `json:"exchange_rate"`
	Fee               int64           `json:"fee"`
	FeeDetails        []feeDetailJSON `json:"fee_details"`
	Net               int64           `json:"net"`
	ReportingCategory string          `json:"reporting_category"`
	Source            json.RawMessage `json:"source"`
	Status            string          `json:"status"`
	Type              string          `json:"type"`
}

type feeDetailJSON struct {
	Amount      int64   `json:"amount"`
	Application *string `json:"application"`
	Currency    string  `json:"currency"`
	Description string  `json:"description"`
	Type        string  `json:"type"`
}

func (l *btRec) json(expand bool) btJSON {
	j := btJSON{ID: l.id, Object: "balance_transaction", Amount: l.amount, AvailableOn: l.created + 2*86400, Created: l.created,
		Currency: l.currency, Fee: l.fee, FeeDetails: []feeDetailJSON{}, Net: l.net, ReportingCategory: l.category,
		Source: json.RawMessage("null"), Status: "available", Type: l.typ}
	if l.fee != 0 {
		j.FeeDetails = append(j.FeeDetails, feeDetailJSON{Amount: l.fee, Currency: l.currency, Description: "Stripe processing fees", Type: "stripe_fee"})
	}
	switch {
	case expand && len(l.source) > 0:
		j.Source = l.source
	case l.sourceID != "":
		j.Source, _ = json.Marshal(l.sourceID)
	}
	return j
}

func (s *Server) handleListPayouts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, e := parseListParams(q, func(key string) bool { return key == "status" })
	if e == nil {
		_, e = parseExpand(q, "")
	}
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	status := q.Get("status")
	out := listJSON[payoutJSON]{Object: "list", Data: []payoutJSON{}, URL: "/v1/payouts"}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ps := s.payouts
	list := ps.order
	at := -1
	if id, param := p.cursor(); id != "" {
		c, ok := ps.byID[id]
		if !ok {
			s.writeError(w, http.StatusBadRequest, noSuchPayout(id, param))
			return
		}
		at, _ = slices.BinarySearchFunc(list, c, cmpPayout)
	}
	var page []*payoutRec
	page, out.HasMore = pageOf(list, p, at, func(x *payoutRec) bool {
		return x.created >= p.lo && x.created <= p.hi && (status == "" || string(x.status) == status)
	})
	for _, x := range page {
		out.Data = append(out.Data, x.json())
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleRetrievePayout(w http.ResponseWriter, r *http.Request) {
	if e := onlyExpand(r.URL.Query()); e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	if _, e := parseExpand(r.URL.Query(), ""); e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	id := r.PathValue("id")
	s.mu.RLock()
	p, ok := s.payouts.byID[id]
	var j payoutJSON
	if ok {
		j = p.json()
	}
	s.mu.RUnlock()
	if !ok {
		s.writeError(w, http.StatusNotFound, noSuchPayout(id, "id"))
		return
	}
	writeJSON(w, http.StatusOK, j)
}

// handleListBalanceTransactions lists balance transactions, newest first:
// those of one automatic payout with payout=po_…; without it, every
// payout's in turn (newest payout first). expand[]=data.source renders each
// source (charge, refund, dispute, payout) as the object.
func (s *Server) handleListBalanceTransactions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, e := parseListParams(q, func(key string) bool { return key == "payout" || key == "type" })
	var expand bool
	if e == nil {
		expand, e = parseExpand(q, "data.source")
	}
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	out := listJSON[btJSON]{Object: "list", Data: []btJSON{}, URL: "/v1/balance_transactions"}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ps := s.payouts
	var all []*btRec
	if id := q.Get("payout"); id != "" {
		po, ok := ps.byID[id]
		if !ok {
			s.writeError(w, http.StatusBadRequest, noSuchPayout(id, "payout"))
			return
		}
		if !po.automatic {
			s.writeError(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Param: "payout",
				Message: "Balance transaction history can only be filtered on automatic transfers, not manual."})
			return
		}
		all = po.lines
	} else {
		for _, po := range ps.order {
			all = append(all, po.lines...)
		}
	}
	at := -1
	if id, param := p.cursor(); id != "" {
		c, ok := ps.lines[id]
		if at = slices.Index(all, c); !ok || at < 0 {
			s.writeError(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "resource_missing", Param: param,
				Message: fmt.Sprintf("No such balance transaction: '%s'", id)})
			return
		}
	}
	typ := q.Get("type")
	var page []*btRec
	page, out.HasMore = pageOf(all, p, at, func(l *btRec) bool {
		return l.created >= p.lo && l.created <= p.hi && (typ == "" || l.typ == typ)
	})
	for _, l := range page {
		out.Data = append(out.Data, l.json(expand))
	}
	writeJSON(w, http.StatusOK, out)
}

// pageOf is one page of list (newest first) for the list parameters: up
// to p.limit items that keep, after the cursor's position at (-1: none),
// walking on for starting_after and back for ending_before (the page
// still newest first); more says another page follows that way.
func pageOf[T any](list []T, p listParams, at int, keep func(T) bool) (page []T, more bool) {
	from, to, step := 0, len(list), 1
	if at >= 0 {
		if p.startingAfter != "" {
			from = at + 1
		} else {
			from, to, step = at-1, -1, -1
		}
	}
	for i := from; i != to; i += step {
		if !keep(list[i]) {
			continue
		}
		if len(page) == p.limit {
			more = true
			break
		}
		page = append(page, list[i])
	}
	if step < 0 {
		slices.Reverse(page)
	}
	return page, more
}

func noSuchPayout(id, param string) apiError {
	return apiError{Type: "invalid_request_error", Code: "resource_missing", Param: param,
		Message: fmt.Sprintf("No such payout: '%s'", id)}
}

// classifyPayoutRequest names the payout endpoints of a GET path ("" for
// others).
func classifyPayoutRequest(p string) string {
	switch {
	case p == "/v1/payouts":
		return EndpointListPayouts
	case p == "/v1/balance_transactions":
		return EndpointListBalanceTransactions
	case strings.HasPrefix(p, "/v1/payouts/"):
		rest := strings.TrimPrefix(p, "/v1/payouts/")
		if _, err := url.PathUnescape(rest); err == nil && rest != "" && !strings.Contains(rest, "/") {
			return EndpointRetrievePayout
		}
	}
	return ""
}
