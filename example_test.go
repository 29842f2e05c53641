package payrecon_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
)

// A receiver of payrecon's notifications (--notify-url): verify the
// signature on the raw body, then act, deduplicating by the notification's
// id (delivery is at least once). Answer 2xx only once the effect is
// committed; anything else is retried for about 3 days.
func ExampleVerifyNotification() {
	const secret = "notify-secret" // the same as payrecon's --notify-secret
	seen := map[int64]bool{}       // in your database, in the effect's transaction
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := payrecon.VerifyNotification(body, r.Header.Get(payrecon.SignatureHeader), secret, 5*time.Minute); err != nil {
			// ErrSignatureMismatch, ErrSignatureHeader, ErrSignatureExpired:
			// never retried into success; fix the secret or the clock.
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var n payrecon.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if !seen[n.ID] {
			seen[n.ID] = true
			fmt.Printf("order %s: %s → %s (%s)\n", n.OrderID, n.From, n.To, n.Source)
		}
		w.WriteHeader(http.StatusNoContent)
	})

	body := []byte(`{"id":4182,"type":"payment.transitioned","payment_id":77,"order_id":"ord_77",` +
		`"stripe_payment_intent_id":"pi_3Q","from":"pending","to":"paid","version":1,` +
		`"source":"repair","source_ref":"9120","occurred_at":"2026-11-30T12:00:00.123Z"}`)
	deliver := func(signature string) int {
		req := httptest.NewRequest(http.MethodPost, "/payrecon", strings.NewReader(string(body)))
		req.Header.Set(payrecon.SignatureHeader, signature)
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	now := time.Now()
	fmt.Println(deliver(payrecon.SignNotification(body, secret, now)))         // payrecon's delivery
	fmt.Println(deliver(payrecon.SignNotification(body, secret, now)))         // a redelivery: no second effect
	fmt.Println(deliver(payrecon.SignNotification(body, "someone-else", now))) // forged
	// Output:
	// order ord_77: pending → paid (repair)
	// 204
	// 204
	// 401
}
