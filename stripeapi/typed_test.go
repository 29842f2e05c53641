package stripeapi

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stripe/stripe-go/v85"

	"github.com/payrecon/payrecon"
)

// The typed path: how the gateway read PaymentIntents before slim decoding,
// through stripe-go's typed client and structs. It stays here as the
// reference the slim decoder must agree with on every field payrecon reads
// (decode_test.go, and the contract against the simulator and stripe-mock).

// TypedRetrieveIntent is RetrieveIntent through stripe-go's typed client.
func TypedRetrieveIntent(g *Gateway, ctx context.Context, id string) (payrecon.Intent, error) {
	var pi *stripe.PaymentIntent
	err := g.do(ctx, opRetrieve, func(ctx context.Context) error {
		var err error
		params := &stripe.PaymentIntentRetrieveParams{}
		params.AddExpand(expandChargeRetrieve)
		pi, err = g.sc.V1PaymentIntents.Retrieve(ctx, id, params)
		return err
	})
	if err != nil {
		return payrecon.Intent{}, fmt.Errorf("retrieve payment intent %q: %w", id, err)
	}
	return typedIntent(pi), nil
}

// TypedListIntents is ListIntents through stripe-go's typed client.
func TypedListIntents(g *Gateway, ctx context.Context, q payrecon.ListQuery) (payrecon.IntentPage, error) {
	var page payrecon.IntentPage
	err := g.do(ctx, opList, func(ctx context.Context) error {
		params := listParams(q, true)
		params.Single = true
		list := g.sc.V1PaymentIntents.List(ctx, params)
		if err := list.Err(); err != nil {
			return err
		}
		page = payrecon.IntentPage{Intents: []payrecon.Intent{}, HasMore: list.Meta().HasMore}
		for _, pi := range list.Data() {
			page.Intents = append(page.Intents, typedIntent(pi))
		}
		return nil
	})
	return page, err
}

// typedDecodeIntent decodes a PaymentIntent with stripe-go's struct.
func typedDecodeIntent(body []byte) (payrecon.Intent, error) {
	var pi stripe.PaymentIntent
	if err := json.Unmarshal(body, &pi); err != nil {
		return payrecon.Intent{}, err
	}
	return typedIntent(&pi), nil
}

// typedDecodeIntentPage decodes a list page with stripe-go's structs, as
// its list iterator does (a page of *PaymentIntent and the list's meta).
func typedDecodeIntentPage(body []byte) (payrecon.IntentPage, error) {
	var p struct {
		stripe.ListMeta
		Data []*stripe.PaymentIntent `json:"data"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return payrecon.IntentPage{}, err
	}
	page := payrecon.IntentPage{Intents: make([]payrecon.Intent, len(p.Data)), HasMore: p.HasMore}
	for i, pi := range p.Data {
		if pi == nil {
			pi = &stripe.PaymentIntent{}
		}
		page.Intents[i] = typedIntent(pi)
	}
	return page, nil
}

func typedIntent(pi *stripe.PaymentIntent) payrecon.Intent {
	return payrecon.Intent{
		ID:             pi.ID,
		Status:         payrecon.StripeStatus(pi.Status),
		Created:        unixTime(pi.Created),
		Amount:         pi.Amount,
		AmountReceived: pi.AmountReceived,
		Currency:       string(pi.Currency),
		Metadata:       pi.Metadata,
		LatestCharge:   typedCharge(pi.LatestCharge),
	}
}

// typedCharge maps the latest charge: nil when the intent has none; a
// charge Stripe sent as its id alone (stripe-go then fills in the ID only)
// keeps just the ID.
func typedCharge(ch *stripe.Charge) *payrecon.Charge {
	if ch == nil || ch.ID == "" {
		return nil
	}
	if ch.Object == "" && ch.Created == 0 {
		return &payrecon.Charge{ID: ch.ID}
	}
	return &payrecon.Charge{
		ID:             ch.ID,
		AmountCaptured: ch.AmountCaptured,
		AmountRefunded: ch.AmountRefunded,
		Refunded:       ch.Refunded,
		Disputed:       ch.Disputed,
		Currency:       string(ch.Currency),
		Created:        unixTime(ch.Created),
	}
}
