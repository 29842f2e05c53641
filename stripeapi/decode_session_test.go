package stripeapi

import (
	"encoding/json"
	"testing"

	"github.com/payrecon/payrecon"
)

// A session's payment_intent decodes as null, an id, or the intent
// expanded with its charge expanded or as an id; a page the same way; and
// both decodes (one pass, flexible) agree where both apply.
func TestDecodeSession(t *testing.T) {
	t.Parallel()
	const charge = `{"id":"ch_1","object":"charge","amount_captured":500,"amount_refunded":0,"refunded":false,"disputed":false,"currency":"usd","created":1700000100}`
	intent := func(ch string) string {
		return `{"id":"pi_1","object":"payment_intent","status":"succeeded","created":1700000050,"amount":500,"amount_received":500,"currency":"usd","metadata":{},"latest_charge":` + ch + `}`
	}
	session := func(pi string) string {
		return `{"id":"cs_1","object":"checkout.session","status":"complete","payment_status":"paid","created":1700000000,"expires_at":1700086400,"payment_intent":` + pi + `}`
	}
	for _, c := range []struct {
		name     string
		pi       string
		intentID string
		expanded bool
		charge   bool
	}{
		{"no intent", "null", "", false, false},
		{"an id", `"pi_1"`, "pi_1", false, false},
		{"expanded with its charge", intent(charge), "pi_1", true, true},
		{"expanded, the charge an id", intent(`"ch_1"`), "pi_1", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := decodeSession([]byte(session(c.pi)))
			if err != nil {
				t.Fatal(err)
			}
			if s.ID != "cs_1" || s.Status != payrecon.SessionComplete || s.PaymentStatus != "paid" || s.Created.Unix() != 1700000000 ||
				s.ExpiresAt.Unix() != 1700086400 || s.PaymentIntentID != c.intentID || (s.PaymentIntent != nil) != c.expanded {
				t.Fatalf("decoded %+v", s)
			}
			if c.expanded && (s.PaymentIntent.Status != payrecon.IntentSucceeded || s.PaymentIntent.AmountReceived != 500 ||
				s.PaymentIntent.LatestCharge == nil || s.PaymentIntent.LatestCharge.Expanded() != c.charge) {
				t.Fatalf("its intent %+v", s.PaymentIntent)
			}
			page, err := decodeSessionPage([]byte(`{"object":"list","has_more":true,"data":[` + session(c.pi) + `,` + session("null") + `]}`))
			if err != nil || len(page.Sessions) != 2 || !page.HasMore || page.Sessions[0].PaymentIntentID != c.intentID || page.Sessions[1].PaymentIntentID != "" {
				t.Fatalf("page %+v %v", page, err)
			}
			var f flexSessionWire
			if err := json.Unmarshal([]byte(session(c.pi)), &f); err != nil {
				t.Fatal(err)
			}
			if flex := f.session(f.PaymentIntent); flex.PaymentIntentID != s.PaymentIntentID || (flex.PaymentIntent == nil) != (s.PaymentIntent == nil) ||
				(flex.PaymentIntent != nil && *flex.PaymentIntent.LatestCharge != *s.PaymentIntent.LatestCharge) {
				t.Errorf("the flexible decode gives %+v, the one-pass %+v", flex, s)
			}
		})
	}
	if _, err := decodeSession([]byte(`{"id":`)); err == nil {
		t.Error("a truncated answer decoded")
	}
}
