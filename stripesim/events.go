package stripesim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// ErrNoSuchEvent: no event with that id.
var ErrNoSuchEvent = errors.New("stripesim: no such event")

// Event types the simulator records.
const (
	EventPaymentIntentCreated                 = "payment_intent.created"
	EventPaymentIntentProcessing              = "payment_intent.processing"
	EventPaymentIntentRequiresAction          = "payment_intent.requires_action"
	EventPaymentIntentAmountCapturableUpdated = "payment_intent.amount_capturable_updated"
	EventPaymentIntentSucceeded               = payrecon.EventPaymentIntentSucceeded
	EventPaymentIntentCanceled                = payrecon.EventPaymentIntentCanceled
	EventPaymentIntentPaymentFailed           = payrecon.EventPaymentIntentPaymentFailed
)

// EventTypeFor returns the event Stripe sends when an intent moves from old
// to new, or "" when it sends none: succeeded, canceled, processing,
// requires_action and amount_capturable_updated (requires_capture) for the
// statuses of those names, and payment_failed when an intent returns to
// requires_payment_method.
func EventTypeFor(old, new payrecon.StripeStatus) string {
	if old == new {
		return ""
	}
	switch new {
	case payrecon.IntentSucceeded:
		return EventPaymentIntentSucceeded
	case payrecon.IntentCanceled:
		return EventPaymentIntentCanceled
	case payrecon.IntentProcessing:
		return EventPaymentIntentProcessing
	case payrecon.IntentRequiresAction:
		return EventPaymentIntentRequiresAction
	case payrecon.IntentRequiresCapture:
		return EventPaymentIntentAmountCapturableUpdated
	case payrecon.IntentRequiresPaymentMethod:
		return EventPaymentIntentPaymentFailed
	}
	return ""
}

// Event is a recorded event as tests see it.
type Event struct {
	ID      string
	Type    string
	Created time.Time
	// IntentID is the PaymentIntent the event is about: data.object's id
	// for payment_intent.* events, its payment_intent for charge.* events.
	IntentID string
	// Status is the intent's status when the event was recorded.
	Status payrecon.StripeStatus
	// Attempts counts webhook deliveries tried, dropped ones included.
	Attempts int
	// Delivered is true once a delivery was answered 2xx.
	Delivered bool
}

type eventRec struct {
	seq       int64
	id        string
	typ       string
	created   int64
	account   string // the connected account the event happened on; "" for the platform
	intentID  string
	status    payrecon.StripeStatus
	object    json.RawMessage // data.object: the intent, charge or dispute when the event happened
	previous  json.RawMessage // previous_attributes, or nil
	attempts  int
	delivered bool
	// hidden keeps the event out of GET /v1/events for now (HideEvent):
	// Stripe's list is eventually consistent, and an event can become
	// visible after newer ones were already listed.
	hidden bool
}

func (e *eventRec) event() Event {
	return Event{
		ID: e.id, Type: e.typ, Created: time.Unix(e.created, 0).UTC(),
		IntentID: e.intentID, Status: e.status, Attempts: e.attempts, Delivered: e.delivered,
	}
}

// eventLog keeps events oldest first: by created, then by sequence.
type eventLog struct {
	list []*eventRec
	byID map[string]*eventRec
	seq  int64
}

func newEventLog() *eventLog {
	return &eventLog{byID: make(map[string]*eventRec)}
}

func (l *eventLog) pos(e *eventRec) int {
	return sort.Search(len(l.list), func(i int) bool {
		x := l.list[i]
		return x.created > e.created || (x.created == e.created && x.seq >= e.seq)
	})
}

// recordEvent records an event about intent r whose data.object is object
// (the intent, its charge or a dispute) and whose
// data.previous_attributes is previous (nil: none); s.mu must be held.
func (s *Server) recordEvent(typ string, r *record, object any, previous map[string]any, now time.Time) string {
	l := s.events
	l.seq++
	e := &eventRec{
		seq: l.seq, id: s.newID("evt_"), typ: typ, created: now.Unix(), account: r.account,
		intentID: r.id, status: r.status, object: s.encodeObject(object, r.id),
	}
	if previous != nil {
		e.previous = s.encodeObject(previous, r.id)
	}
	l.list = slices.Insert(l.list, l.pos(e), e)
	l.byID[e.id] = e
	return e.id
}

// recordIntentEvent records a payment_intent.* event: data.object is the
// intent as it is now, and previous_attributes its old status, if any.
func (s *Server) recordIntentEvent(typ string, r *record, old payrecon.StripeStatus, now time.Time) string {
	var previous map[string]any
	if old != "" {
		previous = map[string]any{"status": string(old)}
	}
	return s.recordEvent(typ, r, r.json(false), previous, now)
}

// HideEvent keeps event id out of GET /v1/events until ShowEvent: an
// event Stripe lists late, after newer ones (its list is eventually
// consistent). Retrieval and webhooks are unaffected.
func (s *Server) HideEvent(id string) error { return s.setHidden(id, true) }

// ShowEvent makes an event hidden by HideEvent listed again, at its own
// place (by its created time).
func (s *Server) ShowEvent(id string) error { return s.setHidden(id, false) }

func (s *Server) setHidden(id string, hidden bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.events.byID[id]
	if !ok {
		return fmt.Errorf("event %q: %w", id, ErrNoSuchEvent)
	}
	e.hidden = hidden
	return nil
}

// Events returns every recorded event, oldest first.
func (s *Server) Events() []Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Event, len(s.events.list))
	for i, e := range s.events.list {
		out[i] = e.event()
	}
	return out
}

// EventPayload returns the JSON body a webhook delivery of event id carries.
func (s *Server) EventPayload(id string) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.events.byID[id]
	if !ok {
		return nil, fmt.Errorf("event %q: %w", id, ErrNoSuchEvent)
	}
	return json.Marshal(e.json())
}

// eventJSON is an Event as Stripe renders it.
type eventJSON struct {
	ID              string           `json:"id"`
	Object          string           `json:"object"`
	Account         string           `json:"account,omitempty"`
	APIVersion      string           `json:"api_version"`
	Created         int64            `json:"created"`
	Data            eventDataJSON    `json:"data"`
	Livemode        bool             `json:"livemode"`
	PendingWebhooks int              `json:"pending_webhooks"`
	Request         eventRequestJSON `json:"request"`
	Type            string           `json:"type"`
}

type eventDataJSON struct {
	Object             json.RawMessage `json:"object"`
	PreviousAttributes json.RawMessage `json:"previous_attributes,omitempty"`
}

type eventRequestJSON struct {
	ID             *string `json:"id"`
	IdempotencyKey *string `json:"idempotency_key"`
}

func (e *eventRec) json() eventJSON {
	pending := 1
	if e.delivered {
		pending = 0
	}
	return eventJSON{
		ID:              e.id,
		Object:          "event",
		Account:         e.account,
		APIVersion:      stripe.APIVersion,
		Created:         e.created,
		Data:            eventDataJSON{Object: e.object, PreviousAttributes: e.previous},
		PendingWebhooks: pending,
		Type:            e.typ,
	}
}

// eventFilter is the endpoint-specific part of GET /v1/events.
type eventFilter struct {
	typ             string // exact, or "prefix.*"
	types           []string
	deliverySuccess *bool
	account         string // the Stripe-Account header: only that account's events
}

func parseEventFilter(q map[string][]string) (eventFilter, *apiError) {
	var f eventFilter
	for key, vals := range q {
		switch {
		case key == "type":
			f.typ = vals[0]
		case key == "types" || key == "types[]" || strings.HasPrefix(key, "types["):
			f.types = append(f.types, vals...)
		case key == "delivery_success":
			switch vals[0] {
			case "true":
				f.deliverySuccess = new(bool)
				*f.deliverySuccess = true
			case "false":
				f.deliverySuccess = new(bool)
			default:
				return f, badRequest(key, "parameter_invalid_boolean", "Invalid boolean: "+vals[0])
			}
		}
	}
	if f.typ != "" && len(f.types) > 0 {
		return f, badRequest("types", "parameters_exclusive", "You may only specify one of these parameters: type, types.")
	}
	if len(f.types) > 20 {
		return f, badRequest("types", "", "You may pass at most 20 event types.")
	}
	return f, nil
}

func isEventFilterKey(key string) bool {
	return key == "type" || key == "delivery_success" || key == "types" || strings.HasPrefix(key, "types[")
}

func (f eventFilter) match(e *eventRec, lo, hi int64) bool {
	if e.hidden || e.account != f.account || e.created < lo || e.created > hi {
		return false
	}
	if f.deliverySuccess != nil && *f.deliverySuccess != e.delivered {
		return false
	}
	if f.typ != "" {
		if prefix, ok := strings.CutSuffix(f.typ, "*"); ok {
			return strings.HasPrefix(e.typ, prefix)
		}
		return e.typ == f.typ
	}
	return len(f.types) == 0 || slices.Contains(f.types, e.typ)
}

func (s *Server) handleListEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, e := parseListParams(q, isEventFilterKey)
	if e == nil {
		_, e = parseExpand(q, "")
	}
	if e == nil {
		var f eventFilter
		if f, e = parseEventFilter(q); e == nil {
			f.account = r.Header.Get("Stripe-Account")
			s.listEvents(w, p, f)
			return
		}
	}
	s.writeError(w, http.StatusBadRequest, *e)
}

func (s *Server) listEvents(w http.ResponseWriter, p listParams, f eventFilter) {
	out := listJSON[eventJSON]{Object: "list", Data: []eventJSON{}, URL: "/v1/events"}
	s.mu.RLock()
	list := s.events.list
	// Newest first is the log walked backwards; ending_before walks forwards
	// from its cursor (closest first) and reverses the page.
	from, to, step := len(list)-1, -1, -1
	if id, param := p.cursor(); id != "" {
		c, ok := s.events.byID[id]
		if !ok || c.account != f.account {
			s.mu.RUnlock()
			s.writeError(w, http.StatusBadRequest, apiError{Type: "invalid_request_error", Code: "resource_missing",
				Param: param, Message: fmt.Sprintf("No such event: '%s'", id)})
			return
		}
		if pos := s.events.pos(c); p.startingAfter != "" {
			from = pos - 1
		} else {
			from, to, step = pos+1, len(list), 1
		}
	}
	var page []*eventRec
	for i := from; i != to; i += step {
		if !f.match(list[i], p.lo, p.hi) {
			continue
		}
		if len(page) == p.limit {
			out.HasMore = true
			break
		}
		page = append(page, list[i])
	}
	if step > 0 {
		slices.Reverse(page)
	}
	for _, e := range page {
		out.Data = append(out.Data, e.json())
	}
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, out)
}
