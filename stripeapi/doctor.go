package stripeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/payrecon/payrecon"
)

// What `payrecon doctor` asks Stripe: only reads.

// Permissions, in the Dashboard's words.
const (
	PermissionPaymentIntents = "PaymentIntents: Read"
	PermissionCharges        = "Charges: Read"
	PermissionEvents         = "Events: Read"
	PermissionSessions       = "Checkout Sessions: Read"
)

// PermissionCheck is one permission the configuration needs and what
// Stripe answered for it: Err is nil when the key has it, a
// *payrecon.ConfigError naming it when Stripe refused (401, 403), another
// error when Stripe could not be asked.
type PermissionCheck struct {
	Permission string
	Err        error
}

// CheckPermissions asks Stripe, one cheap request each, whether the key
// has each permission needs implies: PaymentIntents: Read (one intent
// listed), Charges: Read (the same with its latest charge expanded, as the
// sweep reads), Events: Read (one event listed) when needs.Events,
// Checkout Sessions: Read (one session listed) when needs.Sessions. It
// answers every one, where CheckAccess stops at the first refusal.
func (g *Gateway) CheckPermissions(ctx context.Context, needs AccessNeeds) []PermissionCheck {
	_, err := g.listIntents(ctx, payrecon.ListQuery{Limit: 1}, false)
	out := []PermissionCheck{{Permission: PermissionPaymentIntents, Err: err}}
	if needs.Charges {
		if err == nil {
			_, err = g.listIntents(ctx, payrecon.ListQuery{Limit: 1}, true)
		}
		out = append(out, PermissionCheck{Permission: PermissionCharges, Err: err})
	}
	if needs.Events {
		_, err := g.ListEvents(ctx, payrecon.EventQuery{Limit: 1})
		out = append(out, PermissionCheck{Permission: PermissionEvents, Err: err})
	}
	if needs.Sessions {
		_, err := g.ListSessions(ctx, payrecon.ListQuery{Limit: 1})
		out = append(out, PermissionCheck{Permission: PermissionSessions, Err: err})
	}
	return out
}

// probeIntent is the PaymentIntent ServerDate asks for: none has this id,
// so Stripe's expected answer is a 404.
const probeIntent = "pi_payrecon_clock_check"

// ErrNoDate: Stripe's answer carried no Date header.
var ErrNoDate = errors.New("no Date header in Stripe's answer")

// ServerDate asks Stripe for a PaymentIntent that does not exist (one
// request, answered 404) and returns the answer's Date header: Stripe's
// clock, to the second. Whatever the answer, its Date is returned when it
// has one; the error is the answer's translation, nil for the expected
// 404 (a refused key is a *payrecon.ConfigError, as for any read).
func (g *Gateway) ServerDate(ctx context.Context) (time.Time, error) {
	var date time.Time
	err := g.do(ctx, opRetrieve, func(ctx context.Context) error {
		_, err := g.sc.V1PaymentIntents.Retrieve(ctx, probeIntent, nil)
		if a, ok := ctx.Value(answerKey{}).(*answer); ok && a.header != nil {
			if d, perr := http.ParseTime(a.header.Get("Date")); perr == nil {
				date = d
			}
		}
		return err
	})
	if err != nil && !errors.Is(err, payrecon.ErrNotFound) {
		return date, fmt.Errorf("ask Stripe for its clock: %w", err)
	}
	if date.IsZero() {
		return date, ErrNoDate
	}
	return date, nil
}
