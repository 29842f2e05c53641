package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// Operation names, the "op" label of the gateway's metrics.
const (
	opRetrieve = "retrieve"
	opList     = "list"
	opEvents   = "events"
)

// ListEvents reads exactly one page of events (GET /v1/events), filtered by
// q (see payrecon.EventQuery for the cursor semantics), through the same
// retries and error translation as the PaymentIntent reads, reported to
// the metrics as op "events". Events come newest first, as Stripe lists them,
// also when q.EndingBefore is set. A cursor event Stripe no longer has (it
// keeps events for 30 days) is an error matching payrecon.ErrNotFound.
//
// Each RawEvent.JSON is the bytes of that event in Stripe's answer, cut out
// of the page's body with json.RawMessage, not a stripe.Event marshalled
// again: re-marshalling a typed struct drops every field stripe-go v85 does
// not model and renders the rest in its own way, whereas the catch-up must
// hand the webhook parser exactly what Stripe would have delivered. (stripe-go
// does keep each item's bytes in its LastResponse, but its list reverses the
// page for ending_before; the page body has Stripe's own order.)
func (g *Gateway) ListEvents(ctx context.Context, q payrecon.EventQuery) (payrecon.EventPage, error) {
	if q.StartingAfter != "" && q.EndingBefore != "" {
		return payrecon.EventPage{}, &payrecon.ConfigError{Cause: "list events: StartingAfter and EndingBefore are mutually exclusive"}
	}
	if len(q.Types) > 20 {
		return payrecon.EventPage{}, &payrecon.ConfigError{Cause: fmt.Sprintf("list events: %d types, Stripe accepts at most 20", len(q.Types))}
	}
	var page payrecon.EventPage
	err := g.do(ctx, opEvents, func(ctx context.Context) error {
		params := &stripe.EventListParams{}
		params.Single = true // one request, one page: the caller paginates
		params.Limit = stripe.Int64(pageLimit(q.Limit))
		if q.StartingAfter != "" {
			params.StartingAfter = stripe.String(q.StartingAfter)
		}
		if q.EndingBefore != "" {
			params.EndingBefore = stripe.String(q.EndingBefore)
		}
		for _, t := range q.Types {
			params.Types = append(params.Types, stripe.String(t))
		}
		if !q.CreatedGTE.IsZero() || !q.CreatedLT.IsZero() {
			params.CreatedRange = &stripe.RangeQueryParams{}
			if !q.CreatedGTE.IsZero() {
				params.CreatedRange.GreaterThanOrEqual = q.CreatedGTE.Unix()
			}
			if !q.CreatedLT.IsZero() {
				params.CreatedRange.LesserThan = q.CreatedLT.Unix()
			}
		}
		list := g.sc.V1Events.List(ctx, params)
		if err := list.Err(); err != nil {
			return err
		}
		var err error
		page, err = rawEventPage(list.LastResponse())
		if err == nil && len(page.Events) != len(list.Data()) {
			err = fmt.Errorf("events page: %d raw events, stripe-go parsed %d", len(page.Events), len(list.Data()))
		}
		return err
	})
	if err != nil {
		return payrecon.EventPage{}, fmt.Errorf("list events (after %q, before %q): %w", q.StartingAfter, q.EndingBefore, err)
	}
	return page, nil
}

// rawEventPage splits a list body into its events, each kept byte for byte.
// An error here is an answer that is not a list of events: the attempt's
// status (2xx) makes it unavailable, not a configuration error.
func rawEventPage(resp *stripe.APIResponse) (payrecon.EventPage, error) {
	if resp == nil {
		return payrecon.EventPage{}, fmt.Errorf("events page: no response body")
	}
	var body struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}
	if err := json.Unmarshal(resp.RawJSON, &body); err != nil {
		return payrecon.EventPage{}, fmt.Errorf("events page: %w", err)
	}
	if body.Object != "list" {
		return payrecon.EventPage{}, fmt.Errorf("events page: object %q, want a list", body.Object)
	}
	page := payrecon.EventPage{Events: make([]payrecon.RawEvent, 0, len(body.Data)), HasMore: body.HasMore}
	for i, raw := range body.Data {
		var head struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Type    string `json:"type"`
			Created int64  `json:"created"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return payrecon.EventPage{}, fmt.Errorf("events page, item %d: %w", i, err)
		}
		if head.Object != "event" || head.ID == "" || head.Type == "" {
			return payrecon.EventPage{}, fmt.Errorf("events page, item %d: not an event (object %q, id %q, type %q)", i, head.Object, head.ID, head.Type)
		}
		if head.Created < 0 || head.Created > maxUnixSeconds {
			// time.Unix would take it, and PostgreSQL would get a time it
			// cannot store (year 292 billion wraps to 1969 on the way).
			return payrecon.EventPage{}, fmt.Errorf("events page, item %d (%s): created %d is not a time", i, payrecon.Quote(head.ID, 40), head.Created)
		}
		page.Events = append(page.Events, payrecon.RawEvent{
			ID:      head.ID,
			Type:    head.Type,
			Created: time.Unix(head.Created, 0).UTC(),
			JSON:    raw,
		})
	}
	return page, nil
}
