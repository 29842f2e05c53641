package stripesim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// Put stores in, replacing any intent with the same id, without recording an
// event, and returns it as stored (with defaults applied). Unlike Create and
// Seed it does not validate the money fields, so a test can store a state
// Stripe never shows (more refunded than captured) to see how a reader
// copes.
func (s *Server) Put(in Intent) Intent {
	r := s.newRecord(in, s.clock.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intents.put(r)
	return r.intent()
}

// Create stores a new intent and records a payment_intent.created event. It
// fails with ErrDuplicateID if the id exists, and with ErrInvalidAmount for
// money Stripe never shows (see Intent).
func (s *Server) Create(in Intent) (Intent, error) {
	if err := in.validate(); err != nil {
		return Intent{}, fmt.Errorf("create: %w", err)
	}
	now := s.clock.Now()
	r := s.newRecord(in, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.intents.byID[r.id]; dup {
		return Intent{}, fmt.Errorf("create intent %q: %w", r.id, ErrDuplicateID)
	}
	s.intents.put(r)
	s.recordIntentEvent(EventPaymentIntentCreated, r, "", now)
	return r.intent(), nil
}

// Seed stores n new intents, gen(0) … gen(n-1), with one sort and no events:
// the way to load a million intents. It fails, storing nothing, if an id
// exists already or repeats, or an intent's money is invalid (see Intent).
func (s *Server) Seed(n int, gen func(i int) Intent) error {
	now := s.clock.Now()
	recs := make([]*record, n)
	for i := range recs {
		in := gen(i)
		if err := in.validate(); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
		recs[i] = s.newRecord(in, now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intents.seed(recs)
}

// SetStatus changes the status of intent id and records the event Stripe
// would send for the change (see EventTypeFor), returning its id, or "" when
// the change has no event. It fails with ErrNoSuchIntent.
func (s *Server) SetStatus(id string, status payrecon.StripeStatus) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.intents.byID[id]
	if !ok {
		return "", fmt.Errorf("set status of intent %q: %w", id, ErrNoSuchIntent)
	}
	old := r.status
	r.status = status
	if status == payrecon.IntentSucceeded && old != status {
		r.chargedAt = now.Unix()
	}
	switch {
	case status == payrecon.IntentCanceled && old != status:
		r.canceledAt = now.Unix()
	case status == payrecon.IntentRequiresPaymentMethod && old != status:
		r.failed = true
	case status != payrecon.IntentRequiresPaymentMethod:
		r.failed = false
	}
	typ := EventTypeFor(old, status)
	if typ == "" {
		return "", nil
	}
	return s.recordIntentEvent(typ, r, old, now), nil
}

// Delete removes intent id, which then answers 404. It fails with
// ErrNoSuchIntent.
func (s *Server) Delete(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.intents.byID[id]
	if !ok {
		return fmt.Errorf("delete intent %q: %w", id, ErrNoSuchIntent)
	}
	s.intents.remove(r)
	return nil
}

// Get returns intent id.
func (s *Server) Get(id string) (Intent, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.intents.byID[id]
	if !ok {
		return Intent{}, false
	}
	return r.intent(), true
}

// Count returns the number of intents.
func (s *Server) Count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.intents.order)
}

func (s *Server) newRecord(in Intent, now time.Time) *record {
	r := &record{
		id:       in.ID,
		amount:   cmp.Or(in.Amount, 1000),
		currency: strings.ToLower(cmp.Or(in.Currency, "usd")),
		status:   cmp.Or(in.Status, payrecon.IntentRequiresPaymentMethod),
		created:  now.Unix(),
		metadata: maps.Clone(in.Metadata),
		refunded: in.AmountRefunded,
		disputed: in.Disputed,
		account:  in.Account,
	}
	r.received = cmp.Or(in.AmountReceived, r.amount)
	if r.id == "" {
		r.id = s.newID("pi_")
	}
	if !in.Created.IsZero() {
		r.created = in.Created.Unix()
	}
	if r.status == payrecon.IntentCanceled {
		r.canceledAt = r.created
	}
	return r
}

// intentJSON is a PaymentIntent as Stripe renders it (the fields payrecon
// and a reader of a webhook may look at).
type intentJSON struct {
	ID                      string            `json:"id"`
	Object                  string            `json:"object"`
	Amount                  int64             `json:"amount"`
	AmountCapturable        int64             `json:"amount_capturable"`
	AmountReceived          int64             `json:"amount_received"`
	AutomaticPaymentMethods enabledJSON       `json:"automatic_payment_methods"`
	CanceledAt              *int64            `json:"canceled_at"`
	CancellationReason      *string           `json:"cancellation_reason"`
	CaptureMethod           string            `json:"capture_method"`
	ClientSecret            string            `json:"client_secret"`
	ConfirmationMethod      string            `json:"confirmation_method"`
	Created                 int64             `json:"created"`
	Currency                string            `json:"currency"`
	Customer                *string           `json:"customer"`
	Description             *string           `json:"description"`
	LastPaymentError        *apiErrorJSON     `json:"last_payment_error"`
	LatestCharge            any               `json:"latest_charge"` // nil, the charge id, or the expanded *chargeJSON
	Livemode                bool              `json:"livemode"`
	Metadata                map[string]string `json:"metadata"`
	PaymentMethod           *string           `json:"payment_method"`
	PaymentMethodTypes      []string          `json:"payment_method_types"`
	Status                  string            `json:"status"`
}

type enabledJSON struct {
	Enabled bool `json:"enabled"`
}

type apiErrorJSON struct {
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code"`
	Message     string `json:"message"`
	Type        string `json:"type"`
}

// json renders the intent; expandCharge renders latest_charge as the Charge
// object instead of its id.
func (r *record) json(expandCharge bool) intentJSON {
	j := intentJSON{
		ID:                      r.id,
		Object:                  "payment_intent",
		Amount:                  r.amount,
		AutomaticPaymentMethods: enabledJSON{Enabled: true},
		CaptureMethod:           "automatic",
		ClientSecret:            r.id + "_secret_sim",
		ConfirmationMethod:      "automatic",
		Created:                 r.created,
		Currency:                r.currency,
		Metadata:                maps.Clone(r.metadata),
		PaymentMethodTypes:      []string{"card"},
		Status:                  string(r.status),
	}
	if j.Metadata == nil {
		j.Metadata = map[string]string{}
	}
	switch r.status {
	case payrecon.IntentSucceeded:
		j.AmountReceived = r.received
		if expandCharge {
			j.LatestCharge = r.chargeJSON()
		} else {
			j.LatestCharge = r.chargeID()
		}
	case payrecon.IntentRequiresCapture:
		j.AmountCapturable = r.amount
	case payrecon.IntentCanceled:
		at := r.canceledAt
		j.CanceledAt = &at
	}
	if r.status != payrecon.IntentRequiresPaymentMethod && r.status != payrecon.IntentRequiresConfirmation {
		pm := "pm_" + strings.TrimPrefix(r.id, "pi_")
		j.PaymentMethod = &pm
	}
	if r.failed {
		j.LastPaymentError = &apiErrorJSON{Code: "card_declined", DeclineCode: "generic_decline",
			Message: "Your card was declined.", Type: "card_error"}
	}
	return j
}

type listJSON[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

func (s *Server) handleRetrieveIntent(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := onlyExpand(q); e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	expand, e := parseExpand(q, "latest_charge")
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	id := r.PathValue("id")
	account := r.Header.Get("Stripe-Account")
	s.mu.RLock()
	rec, ok := s.intents.byID[id]
	wrong := ok && rec.account != account
	var j intentJSON
	if ok && !wrong {
		j = rec.json(expand)
	}
	s.mu.RUnlock()
	if wrong {
		s.countWrongAccount()
	}
	if !ok || wrong {
		s.writeError(w, http.StatusNotFound, noSuchIntent(id, "intent"))
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) handleListIntents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, e := parseListParams(q, nil)
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	expand, e := parseExpand(q, "data.latest_charge")
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	out := listJSON[intentJSON]{Object: "list", Data: []intentJSON{}, URL: "/v1/payment_intents"}
	account := r.Header.Get("Stripe-Account")
	mine := func(rec *record) bool { return rec.account == account }
	s.mu.RLock()
	x := s.intents
	start, end := x.createdRange(p.lo, p.hi)
	var page []*record
	switch {
	case p.startingAfter != "":
		cur, ok := x.byID[p.startingAfter]
		if !ok || !mine(cur) {
			s.mu.RUnlock()
			s.writeError(w, http.StatusBadRequest, noSuchIntent(p.startingAfter, "starting_after"))
			return
		}
		page, out.HasMore = collect(x.order, max(start, x.pos(cur)+1), end, 1, p.limit, mine)
	case p.endingBefore != "":
		cur, ok := x.byID[p.endingBefore]
		if !ok || !mine(cur) {
			s.mu.RUnlock()
			s.writeError(w, http.StatusBadRequest, noSuchIntent(p.endingBefore, "ending_before"))
			return
		}
		page, out.HasMore = collect(x.order, min(end, x.pos(cur))-1, start-1, -1, p.limit, mine)
		slices.Reverse(page)
	default:
		page, out.HasMore = collect(x.order, start, end, 1, p.limit, mine)
	}
	for _, rec := range page {
		out.Data = append(out.Data, rec.json(expand))
	}
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, out)
}

// collect walks order from from towards to (exclusive) by step, keeping
// up to limit records that match, and reports whether another one follows.
func collect(order []*record, from, to, step, limit int, match func(*record) bool) ([]*record, bool) {
	var page []*record
	for i := from; i != to && i >= 0 && i < len(order); i += step {
		if !match(order[i]) {
			continue
		}
		if len(page) == limit {
			return page, true
		}
		page = append(page, order[i])
	}
	return page, false
}

// listParams are the parameters every Stripe list endpoint shares.
type listParams struct {
	limit         int
	startingAfter string
	endingBefore  string
	lo, hi        int64 // created bounds, inclusive
}

// parseListParams parses limit, the cursors and the created filter; extra
// accepts (and the caller handles) endpoint-specific keys. Any other key is
// answered 400 parameter_unknown, as Stripe does.
func parseListParams(q url.Values, extra func(key string) bool) (listParams, *apiError) {
	p := listParams{limit: 10, lo: math.MinInt64, hi: math.MaxInt64}
	for key, vals := range q {
		v := vals[0]
		switch key {
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, badRequest(key, "parameter_invalid_integer", "Invalid integer: "+v)
			}
			if n < 1 || n > 100 {
				return p, badRequest(key, "parameter_invalid_integer", "Invalid limit: must be between 1 and 100")
			}
			p.limit = n
		case "starting_after":
			p.startingAfter = v
		case "ending_before":
			p.endingBefore = v
		case "created", "created[gt]", "created[gte]", "created[lt]", "created[lte]":
			ts, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return p, badRequest(key, "parameter_invalid_integer", "Invalid integer: "+v)
			}
			p.narrow(key, ts)
		default:
			if isExpand(key) || (extra != nil && extra(key)) {
				continue
			}
			return p, badRequest(key, "parameter_unknown", "Received unknown parameter: "+key)
		}
	}
	if p.startingAfter != "" && p.endingBefore != "" {
		return p, badRequest("ending_before", "parameters_exclusive",
			"You may only specify one of these parameters: ending_before, starting_after.")
	}
	return p, nil
}

// cursor returns the cursor id and the parameter that carried it.
func (p *listParams) cursor() (id, param string) {
	if p.startingAfter != "" {
		return p.startingAfter, "starting_after"
	}
	return p.endingBefore, "ending_before"
}

// narrow applies one created filter to the inclusive bounds.
func (p *listParams) narrow(key string, ts int64) {
	switch key {
	case "created":
		p.lo, p.hi = max(p.lo, ts), min(p.hi, ts)
	case "created[gte]":
		p.lo = max(p.lo, ts)
	case "created[lte]":
		p.hi = min(p.hi, ts)
	case "created[gt]":
		if ts == math.MaxInt64 {
			p.lo, p.hi = 1, 0 // empty
			return
		}
		p.lo = max(p.lo, ts+1)
	case "created[lt]":
		if ts == math.MinInt64 {
			p.lo, p.hi = 1, 0
			return
		}
		p.hi = min(p.hi, ts-1)
	}
}

func isExpand(key string) bool {
	return key == "expand" || strings.HasPrefix(key, "expand[")
}

// expansions returns the values of every expand parameter: "expand[]=a",
// "expand[0]=a", and the unbracketed "expand=a" form-encoders also send.
func expansions(q url.Values) []string {
	var out []string
	for key, vals := range q {
		if isExpand(key) {
			out = append(out, vals...)
		}
	}
	return out
}

// parseExpand reports whether the latest charge is to be expanded. charge
// is how the endpoint spells that expansion ("latest_charge" on retrieve,
// "data.latest_charge" on list; "" where there is none). Any other expansion
// is answered as Stripe answers a property that cannot be expanded: 400
// invalid_request_error, with Stripe's hint when a list was asked to expand
// an item's property without "data.".
func parseExpand(q url.Values, charge string) (bool, *apiError) {
	expand := false
	for _, v := range expansions(q) {
		if charge != "" && v == charge {
			expand = true
			continue
		}
		msg := fmt.Sprintf("This property cannot be expanded (%s).", v)
		if charge != "" && "data."+v == charge {
			msg += fmt.Sprintf(" You may want to try expanding '%s' instead.", charge)
		}
		return false, &apiError{Type: "invalid_request_error", Message: msg}
	}
	return expand, nil
}

// onlyExpand rejects every parameter but expand, as Stripe does on retrieve.
func onlyExpand(q url.Values) *apiError {
	for key := range q {
		if !isExpand(key) {
			return badRequest(key, "parameter_unknown", "Received unknown parameter: "+key)
		}
	}
	return nil
}
