package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

// WebhookReport says what the webhook scenario did before the sweep.
type WebhookReport struct {
	// Events counts the events the simulator recorded.
	Events int `json:"events"`
	// Delivered counts signed POSTs answered 200, duplicates included.
	Delivered int `json:"delivered"`
	// Dropped counts events never delivered (the missed webhooks).
	Dropped int `json:"dropped"`
	// Duplicated counts events delivered twice.
	Duplicated int `json:"duplicated"`
	// Reordered counts PaymentIntents whose events arrived in the reverse
	// of the order they happened in.
	Reordered int `json:"reordered"`
	// WrongAccount counts the events delivered as if from another account
	// than their payment's (`demo --accounts`: one per account).
	WrongAccount int `json:"wrong_account,omitempty"`
	// Outcomes counts what the webhook handler answered: the canonical
	// writer's outcome (applied, moved_elsewhere, …), "ignored", or
	// "duplicate" for a redelivery it recognised.
	Outcomes map[string]int `json:"outcomes"`
}

// send is one POST of one event.
type send struct {
	eventID string
	// forged, when set, sends eventID's payload as another event: for
	// another intent, from another account.
	forged *forgery
}

// forgery is a payment_intent.succeeded made from a real one: a new id,
// another intent, and the top-level account of another account than the
// intent's row ("" the platform).
type forgery struct {
	id, intentID, account string
}

// intentSends are the deliveries of one PaymentIntent's events, in the
// order they are sent.
type intentSends struct {
	intentID string
	sends    []send
}

// moveIntents moves the intents in the simulator as the scenario says (each
// move records the event Stripe would send) and returns the deliveries to
// make: every event in order, except the dropped ones, the duplicated ones
// twice, and the reordered ones backwards.
func moveIntents(sim *stripesim.Server, p *plan) ([]intentSends, WebhookReport, error) {
	rep := WebhookReport{Outcomes: map[string]int{}}
	var (
		out      []intentSends
		wrong    []row
		template string // a payment_intent.succeeded, the forgeries' model
	)
	for _, r := range p.rows {
		if r.session() {
			is, dropped, err := moveSession(sim, r)
			if err != nil {
				return nil, rep, err
			}
			rep.Dropped += dropped
			if len(is.sends) > 0 {
				out = append(out, is)
			}
			continue
		}
		var events []string
		set := func(s payrecon.StripeStatus, wantEvent bool) error {
			id, err := sim.SetStatus(r.intentID, s)
			if err != nil {
				return fmt.Errorf("move intent %s to %s: %w", r.intentID, s, err)
			}
			if wantEvent {
				if id == "" {
					return fmt.Errorf("move intent %s to %s: the simulator recorded no event", r.intentID, s)
				}
				events = append(events, id)
			}
			return nil
		}
		// fail records a failed attempt: the intent leaves
		// requires_payment_method and comes back to it, which Stripe
		// announces with payment_intent.payment_failed.
		fail := func() error {
			if err := set(payrecon.IntentRequiresConfirmation, false); err != nil {
				return err
			}
			return set(payrecon.IntentRequiresPaymentMethod, true)
		}
		var err error
		var order []int // indexes into events, in delivery order
		switch r.role {
		case rolePaid, roleMissedSuccess, roleAmountMismatch, roleCurrencyMismatch:
			err = set(payrecon.IntentSucceeded, true)
			order = []int{0}
		case roleStuck:
			err = set(payrecon.IntentRequiresCapture, false)
		case roleRefunded, rolePartiallyRefunded, roleDisputed:
			// Paid, then refunded or disputed in Stripe: its webhook is
			// delivered (it opens the finding at once), except the partial
			// refund's, dropped: the sweep finds that one.
			if err = set(payrecon.IntentSucceeded, true); err != nil {
				break
			}
			var id string
			switch r.role {
			case roleRefunded:
				id, err = sim.Refund(r.intentID, 0)
			case rolePartiallyRefunded:
				_, err = sim.Refund(r.intentID, r.amount()/4)
				rep.Dropped++
			case roleDisputed:
				id, err = sim.Dispute(r.intentID)
			}
			order = []int{0}
			if id != "" {
				events = append(events, id)
				order = []int{0, 1}
			}
		case roleCanceled, roleMissedCancel, rolePaidCanceled:
			err = set(payrecon.IntentCanceled, true)
			order = []int{0}
		case roleFailed:
			err = fail()
			order = []int{0}
		case roleDuplicated:
			s := payrecon.IntentSucceeded
			if r.variant != 0 {
				s = payrecon.IntentCanceled
			}
			err = set(s, true)
			order = []int{0, 0}
			rep.Duplicated++
		case roleReordered, roleFailedThenPaid:
			if err = fail(); err == nil {
				err = set(payrecon.IntentSucceeded, true)
			}
			order = []int{0, 1}
			if r.role == roleReordered {
				order = []int{1, 0}
				rep.Reordered++
			}
		}
		if err != nil {
			return nil, rep, err
		}
		if r.role == roleMissedSuccess || r.role == roleMissedCancel {
			rep.Dropped += len(events)
			continue
		}
		if r.role == roleWrongAccount {
			wrong = append(wrong, r)
			continue
		}
		if r.role == rolePaid && template == "" {
			template = events[0]
		}
		if len(order) > 0 {
			is := intentSends{intentID: r.intentID}
			for _, i := range order {
				is.sends = append(is.sends, send{eventID: events[i]})
			}
			out = append(out, is)
		}
	}
	for _, r := range wrong {
		other := p.accounts[(r.account+1)%len(p.accounts)]
		out = append(out, intentSends{intentID: r.intentID, sends: []send{{eventID: template,
			forged: &forgery{id: "evt_wrongaccount" + r.intentID[len("pi_"):], intentID: r.intentID, account: other}}}})
		rep.WrongAccount++
	}
	rep.Events = len(sim.Events())
	return out, rep, nil
}

// deliverer POSTs signed events to a webhook endpoint.
type deliverer struct {
	sim    *stripesim.Server
	url    string
	secret string
	// connectSecret, when set, signs the connected accounts' events, as
	// Stripe's Connect endpoint does with its own secret.
	connectSecret string
	client        *http.Client
}

// deliver sends every intent's deliveries, intents concurrently (workers at
// a time) and each intent's in order, and counts the handler's answers into
// rep. Any answer but 200 is an error: the scenario depends on every
// delivery landing.
func (d *deliverer) deliver(ctx context.Context, all []intentSends, workers int, rep *WebhookReport) error {
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, is := range all {
		g.Go(func() error {
			for _, s := range is.sends {
				outcome, err := d.postSend(gctx, s)
				if err != nil {
					return fmt.Errorf("deliver event %s of intent %s: %w", s.eventID, is.intentID, err)
				}
				mu.Lock()
				rep.Delivered++
				rep.Outcomes[outcome]++
				mu.Unlock()
			}
			return nil
		})
	}
	return g.Wait()
}

// post delivers one event as Stripe does, signed with the endpoint's secret
// at the current time, and returns the handler's outcome.
func (d *deliverer) post(ctx context.Context, eventID string) (string, error) {
	return d.postSend(ctx, send{eventID: eventID})
}

// postSend is post of one send, forged or not.
func (d *deliverer) postSend(ctx context.Context, s send) (string, error) {
	eventID := s.eventID
	payload, err := d.sim.EventPayload(eventID)
	if err != nil {
		return "", err
	}
	if s.forged != nil {
		if payload, err = s.forged.payload(payload); err != nil {
			return "", fmt.Errorf("forge event %s from %s: %w", s.forged.id, eventID, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(payload))
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	secret := d.secret
	if d.connectSecret != "" {
		var ev struct {
			Account string `json:"account"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			return "", fmt.Errorf("decode event %s: %w", eventID, err)
		}
		if ev.Account != "" {
			secret = d.connectSecret
		}
	}
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, secret, time.Now()))
	resp, err := d.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("webhook endpoint answered %d: %s", resp.StatusCode, bytes.TrimSpace(body))
	}
	var res struct {
		Outcome   string `json:"outcome"`
		Duplicate bool   `json:"duplicate"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return "", fmt.Errorf("decode answer %q: %w", body, err)
	}
	if res.Duplicate {
		return "duplicate", nil
	}
	if res.Outcome == "" {
		return "", errors.New("webhook endpoint answered 200 without an outcome")
	}
	return res.Outcome, nil
}

// payload rewrites a real event's payload into the forgery: its id, its
// intent and its account.
func (f *forgery) payload(real []byte) ([]byte, error) {
	var ev map[string]any
	if err := json.Unmarshal(real, &ev); err != nil {
		return nil, err
	}
	ev["id"] = f.id
	if f.account == "" {
		delete(ev, "account")
	} else {
		ev["account"] = f.account
	}
	data, _ := ev["data"].(map[string]any)
	obj, _ := data["object"].(map[string]any)
	if obj == nil {
		return nil, errors.New("the event has no data.object")
	}
	obj["id"] = f.intentID
	return json.Marshal(ev)
}

// moveSession plays a session row's Checkout Session as its role says: the
// customer pays (the session's PaymentIntent, the row's intentID, is
// created a second after the row, on the row's account), pays with an
// asynchronous method that settles later, or never pays and the session
// expires. It returns the checkout.session.* deliveries to make (the
// intents' own payment_intent.* events are not sent: the demo's endpoint
// listens to the session's) and how many events were dropped.
func moveSession(sim *stripesim.Server, r row) (intentSends, int, error) {
	is := intentSends{intentID: r.intentID}
	in := stripesim.Intent{ID: r.intentID, Amount: r.amount(), Currency: "usd", Created: r.created.Add(time.Second)}
	var events []string
	switch r.role {
	case roleSessionPaid, roleSessionMissedSuccess, roleSessionAmountMismatch:
		ev, _, err := sim.CompleteSession(r.sessionID(), in, false)
		if err != nil {
			return is, 0, fmt.Errorf("complete session %s: %w", r.sessionID(), err)
		}
		events = append(events, ev)
	case roleSessionAsync:
		ev, _, err := sim.CompleteSession(r.sessionID(), in, true)
		if err != nil {
			return is, 0, fmt.Errorf("complete session %s: %w", r.sessionID(), err)
		}
		settled, err := sim.SettleAsyncSession(r.sessionID(), true)
		if err != nil {
			return is, 0, fmt.Errorf("settle session %s: %w", r.sessionID(), err)
		}
		events = append(events, ev, settled)
	case roleSessionExpired, roleSessionMissedCancel:
		ev, err := sim.ExpireSession(r.sessionID())
		if err != nil {
			return is, 0, fmt.Errorf("expire session %s: %w", r.sessionID(), err)
		}
		events = append(events, ev)
	}
	if r.role == roleSessionMissedSuccess || r.role == roleSessionMissedCancel {
		return is, len(events), nil
	}
	for _, ev := range events {
		is.sends = append(is.sends, send{eventID: ev})
	}
	return is, 0, nil
}
