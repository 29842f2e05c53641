package stripeapi

import (
	"context"
	"fmt"

	"github.com/payrecon/payrecon"
)

// AccessNeeds says what a configuration will ask Stripe for, so that
// CheckAccess asks for no more than that. PaymentIntents: Read is always
// needed.
type AccessNeeds struct {
	// Charges: the PaymentIntent reads expand the latest charge (RetrieveIntent
	// and ListIntents always do), which a restricted key may only do with
	// Charges: Read. Set it whenever the gateway's intent reads are used.
	Charges bool
	// Events: the events catch-up lists events, which needs Events: Read.
	Events bool
	// Sessions: the rows record Checkout Sessions (the session column was
	// found), which are read with Checkout Sessions: Read.
	Sessions bool
}

// CheckAccess makes one cheap request per resource the configuration needs,
// at start-up, so that a key that cannot do the job fails at once, with the
// missing permission named, instead of at the first row or event that needs
// it:
//
//   - GET /v1/payment_intents?limit=1, with expand[]=data.latest_charge when
//     needs.Charges (exactly the request shape the list reads use);
//   - GET /v1/events?limit=1 when needs.Events;
//   - GET /v1/checkout/sessions?limit=1, with the session reads' expansion,
//     when needs.Sessions.
//
// A 401 or 403 comes back as a *payrecon.ConfigError whose Cause is one line
// naming the permission in the Dashboard's words ("Charges: Read"), never the
// key; other failures are translated as for any read (an unavailable Stripe
// is a *payrecon.UnavailableError: the caller may retry the check).
//
// One limit: if Stripe only checks an expansion's permission when it renders
// a charge, an account whose newest PaymentIntent has no charge passes the
// Charges check without Charges: Read. The sweep then stops with the same
// ConfigError at the first charge it reads.
func (g *Gateway) CheckAccess(ctx context.Context, needs AccessNeeds) error {
	if _, err := g.listIntents(ctx, payrecon.ListQuery{Limit: 1}, needs.Charges); err != nil {
		what := "PaymentIntents"
		if needs.Charges {
			what = "PaymentIntents and their charges"
		}
		return fmt.Errorf("check Stripe access to %s: %w", what, err)
	}
	if needs.Events {
		if _, err := g.ListEvents(ctx, payrecon.EventQuery{Limit: 1}); err != nil {
			return fmt.Errorf("check Stripe access to events: %w", err)
		}
	}
	if needs.Sessions {
		if _, err := g.ListSessions(ctx, payrecon.ListQuery{Limit: 1}); err != nil {
			return fmt.Errorf("check Stripe access to Checkout Sessions: %w", err)
		}
	}
	return nil
}
