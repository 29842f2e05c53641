package postgres_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
)

// The canonical writer inside your own Stripe webhook handler: the same
// conditional transition payrecon's repairs and its own endpoint use, so a
// webhook racing a repair (or delivered twice) moves the payment once, and
// your own writes commit with the status change in one transaction.
func ExampleWriter_ApplyFrom() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, databaseURL) // your application's DATABASE_URL
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	const secret = "whsec_example" // the endpoint's signing secret
	writer := postgres.NewWriter(nil)

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if _, err := webhook.ConstructEventWithOptions(body, r.Header.Get("Stripe-Signature"), secret,
			webhook.ConstructEventOptions{IgnoreAPIVersionMismatch: true}); err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		ev, err := payrecon.ParseEvent(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		cmd, ok := payrecon.CommandForEvent(ev.Type)
		if !ok {
			w.WriteHeader(http.StatusNoContent) // a type the writer does not act on
			return
		}
		var res postgres.ApplyResult
		err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
			res, err = writer.ApplyFrom(r.Context(), tx, cmd, postgres.PaymentRef{IntentID: ev.IntentID()},
				payrecon.Origin{Source: payrecon.SourceWebhook, Ref: ev.ID})
			// Your own writes here (fulfil the order…) commit or roll back
			// with the transition.
			return err
		})
		if err != nil {
			http.Error(w, "try again", http.StatusServiceUnavailable) // Stripe retries
			return
		}
		fmt.Fprintf(w, "%s: %s → %s", res.Outcome, res.Before, res.After)
	})

	// Stripe delivers payment_intent.succeeded, then again (it retries).
	body := []byte(`{"id":"evt_example","object":"event","type":"payment_intent.succeeded","created":1767225600,` +
		`"data":{"object":{"id":"pi_example","object":"payment_intent","status":"succeeded"}}}`)
	for range 2 {
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret})
		req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(string(body)))
		req.Header.Set("Stripe-Signature", signed.Header)
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Println(rec.Body.String())
	}
	// Output:
	// applied: pending → paid
	// already_in_target: paid → paid
}
