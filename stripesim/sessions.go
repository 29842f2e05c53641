package stripesim

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// Endpoints of Checkout Sessions.
const (
	EndpointRetrieveSession = "retrieve_checkout_session"
	EndpointListSessions    = "list_checkout_sessions"
)

// PermissionCheckoutSessionRead is the restricted key's permission for
// Checkout Sessions.
const PermissionCheckoutSessionRead = "rak_checkout_session_read"

// The Checkout Session events the simulator records.
const (
	EventCheckoutSessionCompleted             = payrecon.EventCheckoutSessionCompleted
	EventCheckoutSessionAsyncPaymentSucceeded = payrecon.EventCheckoutSessionAsyncPaymentSucceeded
	EventCheckoutSessionAsyncPaymentFailed    = payrecon.EventCheckoutSessionAsyncPaymentFailed
	EventCheckoutSessionExpired               = payrecon.EventCheckoutSessionExpired
)

// ErrNoSuchSession: no Checkout Session with that id; ErrSessionState: the
// change is not one Stripe makes from the session's state (completing an
// expired session, expiring a complete one).
var (
	ErrNoSuchSession = errors.New("stripesim: no such checkout session")
	ErrSessionState  = errors.New("stripesim: checkout session is not in a state for that")
)

// Session is a Checkout Session as the simulator stores it. Zero fields get
// defaults: a generated "cs_test_…" ID, Status open, PaymentStatus unpaid,
// Created the simulator's clock, ExpiresAt 24 hours after Created.
// IntentID names its PaymentIntent (an intent of the simulator's, on the
// same Account), "" until the customer pays: as since API version
// 2022-08-01, the intent is created when the session is confirmed.
type Session struct {
	ID            string
	Status        payrecon.SessionStatus
	PaymentStatus string
	Created       time.Time
	ExpiresAt     time.Time
	IntentID      string
	Account       string
}

type sessionRec struct {
	id, status, paymentStatus string
	created, expiresAt        int64
	intentID, account         string
}

func (r *sessionRec) session() Session {
	return Session{ID: r.id, Status: payrecon.SessionStatus(r.status), PaymentStatus: r.paymentStatus,
		Created: time.Unix(r.created, 0).UTC(), ExpiresAt: time.Unix(r.expiresAt, 0).UTC(), IntentID: r.intentID, Account: r.account}
}

func cmpSession(a, b *sessionRec) int {
	if c := cmp.Compare(b.created, a.created); c != 0 {
		return c
	}
	return cmp.Compare(b.id, a.id)
}

// sessionIndex holds the sessions by id and newest first; guarded by
// Server.mu.
type sessionIndex struct {
	byID  map[string]*sessionRec
	order []*sessionRec
}

func (x *sessionIndex) pos(r *sessionRec) int {
	i, _ := slices.BinarySearchFunc(x.order, r, cmpSession)
	return i
}

func (x *sessionIndex) put(r *sessionRec) {
	if x.byID == nil {
		x.byID = map[string]*sessionRec{}
	}
	x.byID[r.id] = r
	x.order = slices.Insert(x.order, x.pos(r), r)
}

func (s *Server) newSessionRec(in Session, now time.Time) *sessionRec {
	r := &sessionRec{id: in.ID, status: string(cmp.Or(in.Status, payrecon.SessionOpen)),
		paymentStatus: cmp.Or(in.PaymentStatus, payrecon.SessionUnpaid), created: now.Unix(),
		intentID: in.IntentID, account: in.Account}
	if r.id == "" {
		r.id = s.newID("cs_test_")
	}
	if !in.Created.IsZero() {
		r.created = in.Created.Unix()
	}
	r.expiresAt = r.created + int64(24*time.Hour/time.Second)
	if !in.ExpiresAt.IsZero() {
		r.expiresAt = in.ExpiresAt.Unix()
	}
	return r
}

// CreateSession stores a new session, without an event (Stripe sends none
// for a session's creation). It fails with ErrDuplicateID if the id
// exists, and with ErrNoSuchIntent if IntentID names no intent.
func (s *Server) CreateSession(in Session) (Session, error) {
	r := s.newSessionRec(in, s.clock.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.sessions.byID[r.id]; dup {
		return Session{}, fmt.Errorf("create session %q: %w", r.id, ErrDuplicateID)
	}
	if r.intentID != "" {
		if _, ok := s.intents.byID[r.intentID]; !ok {
			return Session{}, fmt.Errorf("create session %q: intent %q: %w", r.id, r.intentID, ErrNoSuchIntent)
		}
	}
	s.sessions.put(r)
	return r.session(), nil
}

// SeedSessions stores n new sessions, gen(0) … gen(n-1), with one sort and
// no events (benchmarks). Their intents must exist already.
func (s *Server) SeedSessions(n int, gen func(i int) Session) error {
	now := s.clock.Now()
	recs := make([]*sessionRec, n)
	for i := range recs {
		recs[i] = s.newSessionRec(gen(i), now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions.byID == nil {
		s.sessions.byID = make(map[string]*sessionRec, n)
	}
	for _, r := range recs {
		if _, dup := s.sessions.byID[r.id]; dup {
			return fmt.Errorf("seed session %q: %w", r.id, ErrDuplicateID)
		}
		s.sessions.byID[r.id] = r
	}
	s.sessions.order = append(s.sessions.order, recs...)
	slices.SortFunc(s.sessions.order, cmpSession)
	return nil
}

// GetSession returns session id.
func (s *Server) GetSession(id string) (Session, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.sessions.byID[id]
	if !ok {
		return Session{}, false
	}
	return r.session(), true
}

// CompleteSession is the customer paying an open session: it creates the
// session's PaymentIntent (in, on the session's account; Status succeeded
// for a card, processing for an asynchronous payment method such as a bank
// debit), records its payment_intent events, marks the session complete
// (payment_status paid, or unpaid while an asynchronous payment
// processes) and records checkout.session.completed, whose id it returns
// with the intent's.
func (s *Server) CompleteSession(id string, in Intent, async bool) (eventID, intentID string, err error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sessions.byID[id]
	if !ok {
		return "", "", fmt.Errorf("complete session %q: %w", id, ErrNoSuchSession)
	}
	if r.status != string(payrecon.SessionOpen) {
		return "", "", fmt.Errorf("complete session %q (%s): %w", id, r.status, ErrSessionState)
	}
	in.Account = r.account
	in.Status = payrecon.IntentRequiresPaymentMethod
	if err := in.validate(); err != nil {
		return "", "", fmt.Errorf("complete session %q: %w", id, err)
	}
	rec := s.newRecord(in, now)
	if _, dup := s.intents.byID[rec.id]; dup {
		return "", "", fmt.Errorf("complete session %q: intent %q: %w", id, rec.id, ErrDuplicateID)
	}
	s.intents.put(rec)
	s.recordIntentEvent(EventPaymentIntentCreated, rec, "", now)
	target := payrecon.IntentSucceeded
	if async {
		target = payrecon.IntentProcessing
	}
	s.setIntentStatusLocked(rec, target, now)
	r.intentID, r.status = rec.id, string(payrecon.SessionComplete)
	r.paymentStatus = payrecon.SessionPaid
	if async {
		r.paymentStatus = payrecon.SessionUnpaid
	}
	return s.recordSessionEvent(EventCheckoutSessionCompleted, r, now), rec.id, nil
}

// SettleAsyncSession settles the asynchronous payment of a complete
// session: its intent succeeds (payment_status paid,
// checkout.session.async_payment_succeeded) or fails (back to
// requires_payment_method, checkout.session.async_payment_failed). It
// returns the session event's id.
func (s *Server) SettleAsyncSession(id string, succeeded bool) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sessions.byID[id]
	if !ok {
		return "", fmt.Errorf("settle session %q: %w", id, ErrNoSuchSession)
	}
	rec := s.intents.byID[r.intentID]
	if r.status != string(payrecon.SessionComplete) || rec == nil || rec.status != payrecon.IntentProcessing {
		return "", fmt.Errorf("settle session %q (%s): %w", id, r.status, ErrSessionState)
	}
	if succeeded {
		s.setIntentStatusLocked(rec, payrecon.IntentSucceeded, now)
		r.paymentStatus = payrecon.SessionPaid
		return s.recordSessionEvent(EventCheckoutSessionAsyncPaymentSucceeded, r, now), nil
	}
	s.setIntentStatusLocked(rec, payrecon.IntentRequiresPaymentMethod, now)
	return s.recordSessionEvent(EventCheckoutSessionAsyncPaymentFailed, r, now), nil
}

// ExpireSession expires an open session (the customer never paid, or left
// after a failed attempt: its intent, if any, is canceled with it) and
// records checkout.session.expired, whose id it returns.
func (s *Server) ExpireSession(id string) (string, error) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sessions.byID[id]
	if !ok {
		return "", fmt.Errorf("expire session %q: %w", id, ErrNoSuchSession)
	}
	if r.status != string(payrecon.SessionOpen) {
		return "", fmt.Errorf("expire session %q (%s): %w", id, r.status, ErrSessionState)
	}
	if rec := s.intents.byID[r.intentID]; rec != nil && rec.status != payrecon.IntentSucceeded {
		s.setIntentStatusLocked(rec, payrecon.IntentCanceled, now)
	}
	r.status = string(payrecon.SessionExpired)
	return s.recordSessionEvent(EventCheckoutSessionExpired, r, now), nil
}

// setIntentStatusLocked is SetStatus with s.mu held.
func (s *Server) setIntentStatusLocked(r *record, status payrecon.StripeStatus, now time.Time) {
	old := r.status
	r.status = status
	switch {
	case status == payrecon.IntentSucceeded && old != status:
		r.chargedAt = now.Unix()
		r.failed = false
	case status == payrecon.IntentCanceled && old != status:
		r.canceledAt = now.Unix()
	case status == payrecon.IntentRequiresPaymentMethod && old != status:
		r.failed = true
	default:
		r.failed = false
	}
	if typ := EventTypeFor(old, status); typ != "" {
		s.recordIntentEvent(typ, r, old, now)
	}
}

// recordSessionEvent records a checkout.session.* event whose data.object
// is the session as it is now (its payment_intent an id, as in events);
// s.mu must be held.
func (s *Server) recordSessionEvent(typ string, r *sessionRec, now time.Time) string {
	l := s.events
	l.seq++
	e := &eventRec{
		seq: l.seq, id: s.newID("evt_"), typ: typ, created: now.Unix(), account: r.account,
		intentID: r.intentID, object: s.encodeObject(s.sessionJSON(r, 0), r.id),
	}
	if rec := s.intents.byID[r.intentID]; rec != nil {
		e.status = rec.status
	}
	l.list = slices.Insert(l.list, l.pos(e), e)
	l.byID[e.id] = e
	return e.id
}

// sessionJSON is a Checkout Session as Stripe renders it (the fields a
// reconciler looks at).
type sessionJSON struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	AmountTotal   int64             `json:"amount_total"`
	Created       int64             `json:"created"`
	Currency      string            `json:"currency"`
	ExpiresAt     int64             `json:"expires_at"`
	Livemode      bool              `json:"livemode"`
	Metadata      map[string]string `json:"metadata"`
	Mode          string            `json:"mode"`
	PaymentIntent any               `json:"payment_intent"` // nil, the id, or the expanded intent
	PaymentStatus string            `json:"payment_status"`
	Status        string            `json:"status"`
	URL           *string           `json:"url"`
}

// Expansion levels of a session's payment_intent.
const (
	expandNone = iota
	expandIntent
	expandIntentCharge
)

func (s *Server) sessionJSON(r *sessionRec, expand int) sessionJSON {
	j := sessionJSON{ID: r.id, Object: "checkout.session", Created: r.created, ExpiresAt: r.expiresAt,
		Metadata: map[string]string{}, Mode: "payment", PaymentStatus: r.paymentStatus, Status: r.status, Currency: "usd"}
	if r.status == string(payrecon.SessionOpen) {
		u := "https://checkout.stripe.com/c/pay/" + r.id
		j.URL = &u
	}
	if rec := s.intents.byID[r.intentID]; rec != nil {
		j.AmountTotal, j.Currency = rec.amount, rec.currency
		switch expand {
		case expandNone:
			j.PaymentIntent = rec.id
		default:
			j.PaymentIntent = rec.json(expand == expandIntentCharge)
		}
	}
	return j
}

// parseSessionExpand reads a session endpoint's expansions: prefix is ""
// on retrieve, "data." on list.
func parseSessionExpand(q map[string][]string, prefix string) (int, *apiError) {
	level := expandNone
	for _, v := range expansions(q) {
		switch v {
		case prefix + "payment_intent":
			level = max(level, expandIntent)
		case prefix + "payment_intent.latest_charge":
			level = expandIntentCharge
		default:
			msg := fmt.Sprintf("This property cannot be expanded (%s).", v)
			if prefix != "" && !strings.HasPrefix(v, prefix) {
				msg += fmt.Sprintf(" You may want to try expanding '%s%s' instead.", prefix, v)
			}
			return 0, &apiError{Type: "invalid_request_error", Message: msg}
		}
	}
	return level, nil
}

func noSuchSession(id, param string) apiError {
	return apiError{Type: "invalid_request_error", Code: "resource_missing", Param: param,
		Message: fmt.Sprintf("No such checkout.session: '%s'", id)}
}

func (s *Server) handleRetrieveSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := onlyExpand(q); e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	expand, e := parseSessionExpand(q, "")
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	id := r.PathValue("id")
	account := r.Header.Get("Stripe-Account")
	s.mu.RLock()
	rec, ok := s.sessions.byID[id]
	wrong := ok && rec.account != account
	var j sessionJSON
	if ok && !wrong {
		j = s.sessionJSON(rec, expand)
	}
	s.mu.RUnlock()
	if wrong {
		s.countWrongAccount()
	}
	if !ok || wrong {
		s.writeError(w, http.StatusNotFound, noSuchSession(id, "session"))
		return
	}
	writeJSON(w, http.StatusOK, j)
}

func (s *Server) handleListSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, e := parseListParams(q, nil)
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	expand, e := parseSessionExpand(q, "data.")
	if e != nil {
		s.writeError(w, http.StatusBadRequest, *e)
		return
	}
	out := listJSON[sessionJSON]{Object: "list", Data: []sessionJSON{}, URL: "/v1/checkout/sessions"}
	account := r.Header.Get("Stripe-Account")
	s.mu.RLock()
	defer s.mu.RUnlock()
	x := &s.sessions
	start, end := 0, 0
	if p.lo <= p.hi {
		start = sort.Search(len(x.order), func(i int) bool { return x.order[i].created <= p.hi })
		end = sort.Search(len(x.order), func(i int) bool { return x.order[i].created < p.lo })
	}
	from := start
	if p.startingAfter != "" {
		cur, ok := x.byID[p.startingAfter]
		if !ok || cur.account != account {
			s.writeError(w, http.StatusBadRequest, noSuchSession(p.startingAfter, "starting_after"))
			return
		}
		from = max(start, x.pos(cur)+1)
	}
	if p.endingBefore != "" {
		s.writeError(w, http.StatusBadRequest, *badRequest("ending_before", "parameter_unknown", "stripesim: ending_before is not simulated on checkout sessions"))
		return
	}
	for i := from; i < end && i < len(x.order); i++ {
		rec := x.order[i]
		if rec.account != account {
			continue
		}
		if len(out.Data) == p.limit {
			out.HasMore = true
			break
		}
		out.Data = append(out.Data, s.sessionJSON(rec, expand))
	}
	writeJSON(w, http.StatusOK, out)
}
