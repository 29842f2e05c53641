package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// roadOutcome is what one command did to one payment, whichever road it
// came by.
type roadOutcome struct {
	Outcome payrecon.Outcome
	After   payrecon.LocalStatus // "" when there is no payment
	Version int64
	// Transitions counts the payment's payment_transitions rows.
	Transitions int
}

// road sends cmd to the payment named by intent (which may not exist) and
// reports what happened.
type road func(t *testing.T, pool *pgxpool.Pool, cmd payrecon.Command, paymentID int64, intent string) payrecon.Outcome

func eventTypeFor(t *testing.T, cmd payrecon.Command) string {
	t.Helper()
	for _, typ := range []string{payrecon.EventPaymentIntentSucceeded, payrecon.EventPaymentIntentCanceled, payrecon.EventPaymentIntentPaymentFailed} {
		if c, ok := payrecon.CommandForEvent(typ); ok && c == cmd {
			return typ
		}
	}
	t.Fatalf("no event type maps to %s", cmd)
	return ""
}

// Every command × every starting status (and a missing payment) through
// every road into the canonical writer: a direct Writer.Apply, a webhook
// event, a repair command from the outbox. All roads must agree on the
// outcome, the status afterwards and the version: there is one transition.
func TestEveryRoadMakesTheSameTransition(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	w := postgres.NewWriter(nil)
	roads := map[string]road{
		"writer": func(t *testing.T, pool *pgxpool.Pool, cmd payrecon.Command, id int64, intent string) payrecon.Outcome {
			ref := postgres.PaymentRef{ID: id}
			if id == 0 {
				ref = postgres.PaymentRef{IntentID: intent}
			}
			return apply(t, pool, w, cmd, ref).Outcome
		},
		"webhook": func(t *testing.T, pool *pgxpool.Pool, cmd payrecon.Command, _ int64, intent string) payrecon.Outcome {
			ev := payrecon.Event{ID: "evt_" + intent, Type: eventTypeFor(t, cmd),
				Object: payrecon.EventObject{ID: intent, Object: "payment_intent"}}
			res, err := postgres.NewEvents(pool, w, nil).ProcessEvent(ctx, ev)
			if err != nil {
				t.Fatalf("webhook %s: %v", cmd, err)
			}
			return payrecon.Outcome(res.Outcome)
		},
		"repair": func(t *testing.T, pool *pgxpool.Pool, cmd payrecon.Command, id int64, _ string) payrecon.Outcome {
			if id == 0 {
				id = 1 << 40 // no such payment
			}
			var outboxID int64
			if err := pool.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
				VALUES ('Payment', $1, $2, jsonb_build_object('payment_id', $3::bigint)) RETURNING id`,
				fmt.Sprint(id), string(cmd), id).Scan(&outboxID); err != nil {
				t.Fatal(err)
			}
			res, err := applyRepair(t, pool, w, outboxID)
			if err != nil {
				t.Fatalf("repair %s: %v", cmd, err)
			}
			return res.Apply.Outcome
		},
	}
	starts := append([]payrecon.LocalStatus{""}, payrecon.LocalStatuses...) // "": no payment
	n := 0
	for _, tr := range payrecon.Transitions() {
		for _, start := range starts {
			got := map[string]roadOutcome{}
			for name, send := range roads {
				n++
				intent := fmt.Sprintf("pi_road_%d", n)
				var id int64
				if start != "" {
					id = pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: intent, Status: start}})[0]
				}
				o := roadOutcome{Outcome: send(t, pool, tr.Command, id, intent)}
				if id != 0 {
					if err := pool.QueryRow(ctx, "SELECT status, version FROM payments WHERE id = $1", id).Scan(&o.After, &o.Version); err != nil {
						t.Fatal(err)
					}
					o.Transitions = pgtest.Count(t, pool, "SELECT count(*) FROM payment_transitions WHERE payment_id = $1", id)
					if o.Transitions == 1 {
						checkTransitionRow(t, pool, id, start, tr.To, roadSources[name])
					}
				}
				got[name] = o
			}
			want := expectedRoadOutcome(tr, start)
			for name, o := range got {
				if o != want {
					t.Errorf("%s from %q by %s: %+v, want %+v", tr.Command, start, name, o, want)
				}
			}
		}
	}
}

// roadSources is the transition source each road records.
var roadSources = map[string]payrecon.TransitionSource{
	"writer": payrecon.SourceManual, "webhook": payrecon.SourceWebhook, "repair": payrecon.SourceRepair,
}

// checkTransitionRow checks the payment's one transition row against what
// the road did.
func checkTransitionRow(t *testing.T, pool *pgxpool.Pool, id int64, from, to payrecon.LocalStatus, source payrecon.TransitionSource) {
	t.Helper()
	var (
		gotFrom, gotTo, gotSource string
		ref                       *string
		version                   int64
	)
	if err := pool.QueryRow(context.Background(), `SELECT from_status, to_status, version, source, source_ref
		FROM payment_transitions WHERE payment_id = $1`, id).Scan(&gotFrom, &gotTo, &version, &gotSource, &ref); err != nil {
		t.Fatal(err)
	}
	if gotFrom != string(from) || gotTo != string(to) || version != 1 || gotSource != string(source) {
		t.Errorf("payment %d transition = %s→%s v%d by %s, want %s→%s v1 by %s", id, gotFrom, gotTo, version, gotSource, from, to, source)
	}
	if source != payrecon.SourceManual && (ref == nil || *ref == "") {
		t.Errorf("payment %d transition by %s has no source_ref", id, source)
	}
}

// expectedRoadOutcome is the transition table read by hand.
func expectedRoadOutcome(tr payrecon.Transition, start payrecon.LocalStatus) roadOutcome {
	switch {
	case start == "":
		return roadOutcome{Outcome: payrecon.PaymentMissing}
	case tr.Allows(start):
		return roadOutcome{Outcome: payrecon.Applied, After: tr.To, Version: 1, Transitions: 1}
	case start == tr.To:
		return roadOutcome{Outcome: payrecon.AlreadyInTarget, After: start}
	}
	return roadOutcome{Outcome: payrecon.MovedElsewhere, After: start}
}

// An event that cannot be recorded leaves nothing behind and says so: the
// webhook then answers 503 and Stripe retries.
func TestEventsDatabaseDown(t *testing.T) {
	t.Parallel()
	closed := pgtest.NewDB(t)
	closed.Close()
	_, err := postgres.NewEvents(closed, postgres.NewWriter(nil), nil).ProcessEvent(context.Background(),
		payrecon.Event{ID: "evt_1", Type: payrecon.EventPaymentIntentSucceeded, Object: payrecon.EventObject{ID: "pi_1", Object: "payment_intent"}})
	if err == nil {
		t.Fatal("ProcessEvent on a closed pool succeeded")
	}
	pool := pgtest.NewDB(t)
	insertOne(t, pool, payrecon.StatusPending)
	// A failure inside the transaction rolls the claim back with it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := postgres.NewEvents(pool, postgres.NewWriter(nil), nil).ProcessEvent(ctx,
		payrecon.Event{ID: "evt_2", Type: payrecon.EventPaymentIntentSucceeded, Object: payrecon.EventObject{ID: "pi_1", Object: "payment_intent"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("ProcessEvent with a cancelled context: %v", err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events"); n != 0 {
		t.Errorf("%d events recorded by failed calls", n)
	}
}
