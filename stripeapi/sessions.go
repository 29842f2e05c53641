package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/form"

	"github.com/payrecon/payrecon"
)

var _ payrecon.SessionGateway = (*Gateway)(nil)

// The expansions that bring a session's PaymentIntent and its latest charge
// in the same request as the session: a session row costs what an intent
// row costs.
const (
	expandSessionRetrieve = "payment_intent.latest_charge"
	expandSessionList     = "data.payment_intent.latest_charge"
)

// sessionRetrieveQuery is the query of a session's retrieve: exactly what
// stripe-go's CheckoutSessionRetrieveParams with the expansion encodes to.
var sessionRetrieveQuery = func() string {
	params := &stripe.CheckoutSessionRetrieveParams{}
	params.AddExpand(expandSessionRetrieve)
	values := &form.Values{}
	form.AppendTo(values, params)
	return values.Encode()
}()

// RetrieveSession reads one Checkout Session with its PaymentIntent and the
// intent's latest charge expanded (GET /v1/checkout/sessions/{id}?
// expand[]=payment_intent.latest_charge), in one request. An empty id is
// reported as not found.
func (g *Gateway) RetrieveSession(ctx context.Context, id string) (payrecon.Session, error) {
	if id == "" {
		return payrecon.Session{}, fmt.Errorf("retrieve checkout session: empty id: %w", payrecon.ErrNotFound)
	}
	path := stripe.FormatURLPath("/v1/checkout/sessions/%s", id) + "?" + sessionRetrieveQuery
	s, err := getDecoded(ctx, g, opRetrieve, path, decodeSession)
	if err != nil {
		return payrecon.Session{}, fmt.Errorf("retrieve checkout session %q: %w", id, err)
	}
	return s, nil
}

// ListSessions reads exactly one page of Checkout Sessions with their
// PaymentIntents and latest charges expanded (GET /v1/checkout/sessions?
// expand[]=data.payment_intent.latest_charge), newest first, filtered by
// created as ListIntents is. The caller pages on with StartingAfter = the
// last session's ID while HasMore.
func (g *Gateway) ListSessions(ctx context.Context, q payrecon.ListQuery) (payrecon.SessionPage, error) {
	path := "/v1/checkout/sessions?" + sessionListQuery(q)
	page, err := getDecoded(ctx, g, opList, path, decodeSessionPage)
	if err != nil {
		return payrecon.SessionPage{}, fmt.Errorf("list checkout sessions (after %q): %w", q.StartingAfter, err)
	}
	return page, nil
}

// sessionListParams are a session list's parameters in stripe-go's types.
func sessionListParams(q payrecon.ListQuery) *stripe.CheckoutSessionListParams {
	params := &stripe.CheckoutSessionListParams{}
	params.Limit = stripe.Int64(pageLimit(q.Limit))
	params.AddExpand(expandSessionList)
	if q.StartingAfter != "" {
		params.StartingAfter = stripe.String(q.StartingAfter)
	}
	if !q.CreatedGTE.IsZero() || !q.CreatedLTE.IsZero() {
		params.CreatedRange = &stripe.RangeQueryParams{}
		if !q.CreatedGTE.IsZero() {
			params.CreatedRange.GreaterThanOrEqual = q.CreatedGTE.Unix()
		}
		if !q.CreatedLTE.IsZero() {
			params.CreatedRange.LesserThanOrEqual = q.CreatedLTE.Unix()
		}
	}
	return params
}

func sessionListQuery(q payrecon.ListQuery) string {
	values := &form.Values{}
	form.AppendTo(values, sessionListParams(q))
	return values.Encode()
}

// sessionWire is the part of a Checkout Session payrecon reads, its
// PaymentIntent expanded with its charge (or null): decoded in one pass, as
// an intent is. An answer whose payment_intent (or its latest_charge) came
// as an id alone fails that decode and is decoded again with
// flexSessionWire.
type sessionWire struct {
	sessionFields
	PaymentIntent *intentWire `json:"payment_intent"`
}

type sessionFields struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	PaymentStatus string `json:"payment_status"`
	Created       int64  `json:"created"`
	ExpiresAt     int64  `json:"expires_at"`
}

// flexSessionWire is sessionWire with a payment_intent that may also be an
// id, and a charge that may be one too: the second, slower decode.
type flexSessionWire struct {
	sessionFields
	PaymentIntent intentRef `json:"payment_intent"`
}

// intentRef is an expandable PaymentIntent: null, its id, or the object
// (whose latest charge may itself be an id).
type intentRef struct {
	id     string
	intent *payrecon.Intent
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *intentRef) UnmarshalJSON(data []byte) error {
	switch {
	case string(data) == "null":
		return nil
	case len(data) > 0 && data[0] == '"':
		return json.Unmarshal(data, &r.id)
	}
	in, err := decodeIntent(data)
	if err != nil {
		return err
	}
	r.id, r.intent = in.ID, &in
	return nil
}

type sessionPageWire struct {
	Data    []sessionWire `json:"data"`
	HasMore bool          `json:"has_more"`
}

type flexSessionPageWire struct {
	Data    []flexSessionWire `json:"data"`
	HasMore bool              `json:"has_more"`
}

func (f *sessionFields) session(ref intentRef) payrecon.Session {
	return payrecon.Session{
		ID:              f.ID,
		Status:          payrecon.SessionStatus(f.Status),
		PaymentStatus:   f.PaymentStatus,
		Created:         unixTime(f.Created),
		ExpiresAt:       unixTime(f.ExpiresAt),
		PaymentIntentID: ref.id,
		PaymentIntent:   ref.intent,
	}
}

// ref is the one-pass decode's expanded intent as an intentRef.
func (w *sessionWire) ref() intentRef {
	if w.PaymentIntent == nil {
		return intentRef{}
	}
	in := w.PaymentIntent.intent(w.PaymentIntent.LatestCharge)
	return intentRef{id: in.ID, intent: &in}
}

func decodeSession(body []byte) (payrecon.Session, error) {
	var w sessionWire
	if err := json.Unmarshal(body, &w); err == nil {
		return w.session(w.ref()), nil
	}
	var f flexSessionWire
	if err := json.Unmarshal(body, &f); err != nil {
		return payrecon.Session{}, fmt.Errorf("decode checkout session: %w", err)
	}
	return f.session(f.PaymentIntent), nil
}

func decodeSessionPage(body []byte) (payrecon.SessionPage, error) {
	var w sessionPageWire
	if err := json.Unmarshal(body, &w); err == nil {
		page := payrecon.SessionPage{Sessions: make([]payrecon.Session, len(w.Data)), HasMore: w.HasMore}
		for i := range w.Data {
			page.Sessions[i] = w.Data[i].session(w.Data[i].ref())
		}
		return page, nil
	}
	var f flexSessionPageWire
	if err := json.Unmarshal(body, &f); err != nil {
		return payrecon.SessionPage{}, fmt.Errorf("decode checkout session list: %w", err)
	}
	page := payrecon.SessionPage{Sessions: make([]payrecon.Session, len(f.Data)), HasMore: f.HasMore}
	for i := range f.Data {
		page.Sessions[i] = f.Data[i].session(f.Data[i].PaymentIntent)
	}
	return page, nil
}
