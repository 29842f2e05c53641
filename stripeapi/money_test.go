package stripeapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// TestIntentMoney maps every money state the simulator can show, through
// RetrieveIntent and through ListIntents, in one request each.
func TestIntentMoney(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{}, nil)
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	charge := func(id string, captured, refunded int64, full, disputed bool, currency string, at time.Time) *payrecon.Charge {
		return &payrecon.Charge{ID: id, AmountCaptured: captured, AmountRefunded: refunded, Refunded: full, Disputed: disputed, Currency: currency, Created: at}
	}
	type scenario struct {
		name  string
		in    stripesim.Intent
		after func(t *testing.T, id string) // refunds and disputes, through the simulator's API
		want  payrecon.Intent
	}
	var scenarios []scenario
	add := func(name string, in stripesim.Intent, after func(t *testing.T, id string), want payrecon.Intent) {
		i := len(scenarios)
		in.ID = fmt.Sprintf("pi_%02d", i)
		in.Created = base.Add(time.Duration(i) * time.Second)
		want.ID, want.Created = in.ID, in.Created
		if want.Metadata == nil {
			want.Metadata = map[string]string{}
		}
		if want.LatestCharge != nil {
			want.LatestCharge.ID = "ch_" + in.ID[3:]
			want.LatestCharge.Created = in.Created
		}
		scenarios = append(scenarios, scenario{name, in, after, want})
	}
	refund := func(amounts ...int64) func(t *testing.T, id string) {
		return func(t *testing.T, id string) {
			for _, a := range amounts {
				if _, err := b.sim.Refund(id, a); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	add("no charge", stripesim.Intent{Amount: 2500, Currency: "usd", Status: payrecon.IntentRequiresPaymentMethod}, nil,
		payrecon.Intent{Status: payrecon.IntentRequiresPaymentMethod, Amount: 2500, Currency: "usd"})
	add("authorised, not captured", stripesim.Intent{Amount: 2500, Status: payrecon.IntentRequiresCapture}, nil,
		payrecon.Intent{Status: payrecon.IntentRequiresCapture, Amount: 2500, Currency: "usd"})
	add("captured", stripesim.Intent{Amount: 2500, Status: payrecon.IntentSucceeded, Metadata: map[string]string{"order_id": "o_1"}}, nil,
		payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 2500, AmountReceived: 2500, Currency: "usd",
			Metadata: map[string]string{"order_id": "o_1"}, LatestCharge: charge("", 2500, 0, false, false, "usd", time.Time{})})
	add("captured for less", stripesim.Intent{Amount: 2500, AmountReceived: 2000, Status: payrecon.IntentSucceeded}, nil,
		payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 2500, AmountReceived: 2000, Currency: "usd",
			LatestCharge: charge("", 2000, 0, false, false, "usd", time.Time{})})
	add("partially refunded", stripesim.Intent{Amount: 2500, Status: payrecon.IntentSucceeded}, refund(500, 700),
		payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 2500, AmountReceived: 2500, Currency: "usd",
			LatestCharge: charge("", 2500, 1200, false, false, "usd", time.Time{})})
	add("fully refunded", stripesim.Intent{Amount: 2500, Status: payrecon.IntentSucceeded}, refund(1000, 0),
		payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 2500, AmountReceived: 2500, Currency: "usd",
			LatestCharge: charge("", 2500, 2500, true, false, "usd", time.Time{})})
	add("disputed", stripesim.Intent{Amount: 2500, Status: payrecon.IntentSucceeded}, func(t *testing.T, id string) {
		if _, err := b.sim.Dispute(id); err != nil {
			t.Fatal(err)
		}
	}, payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 2500, AmountReceived: 2500, Currency: "usd",
		LatestCharge: charge("", 2500, 0, false, true, "usd", time.Time{})})
	add("other currency (zero-decimal)", stripesim.Intent{Amount: 5000, Currency: "JPY", Status: payrecon.IntentSucceeded}, refund(5000),
		payrecon.Intent{Status: payrecon.IntentSucceeded, Amount: 5000, AmountReceived: 5000, Currency: "jpy",
			LatestCharge: charge("", 5000, 5000, true, false, "jpy", time.Time{})})
	add("canceled", stripesim.Intent{Amount: 300, Currency: "eur", Status: payrecon.IntentCanceled}, nil,
		payrecon.Intent{Status: payrecon.IntentCanceled, Amount: 300, Currency: "eur"})

	for _, sc := range scenarios {
		b.sim.Put(sc.in)
		if sc.after != nil {
			sc.after(t, sc.in.ID)
		}
	}
	ctx := context.Background()

	b.sim.ResetStats()
	page, err := b.gw.ListIntents(ctx, payrecon.ListQuery{CreatedGTE: base, CreatedLTE: base.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.sim.Stats().Requests[stripesim.EndpointListIntents]; n != 1 {
		t.Fatalf("the list took %d requests", n)
	}
	listed := map[string]payrecon.Intent{}
	for _, in := range page.Intents {
		listed[in.ID] = in
	}
	if len(listed) != len(scenarios) {
		t.Fatalf("listed %d intents, want %d", len(listed), len(scenarios))
	}

	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			b.sim.ResetStats() // sequential: the subtests share the counters
			got, err := b.gw.RetrieveIntent(ctx, sc.in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n := b.sim.Stats().Total(); n != 1 {
				t.Errorf("retrieve took %d requests", n)
			}
			if !reflect.DeepEqual(got, sc.want) {
				t.Errorf("retrieve:\n got %s\nwant %s", show(got), show(sc.want))
			}
			if !reflect.DeepEqual(listed[sc.in.ID], sc.want) {
				t.Errorf("list:\n got %s\nwant %s", show(listed[sc.in.ID]), show(sc.want))
			}
			if c := got.LatestCharge; c != nil && !c.Expanded() {
				t.Errorf("charge %+v not expanded", c)
			}
		})
	}
}

func show(in payrecon.Intent) string {
	s := fmt.Sprintf("%+v", in)
	if in.LatestCharge != nil {
		s += fmt.Sprintf(" charge %+v", *in.LatestCharge)
	}
	return s
}

// TestChargeNotExpanded: a server that ignores the expansion (a proxy that
// drops it, a mock) sends latest_charge as an id: the charge keeps its ID
// and says it was not read; null stays nil.
func TestChargeNotExpanded(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		queries []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		charge := `"ch_only_id"`
		if r.URL.Path == "/v1/payment_intents/pi_null" {
			charge = "null"
		}
		fmt.Fprintf(w, `{"id":"%s","object":"payment_intent","amount":900,"amount_received":900,"currency":"usd","created":1700000000,"status":"succeeded","metadata":{},"latest_charge":%s}`,
			r.URL.Path[len("/v1/payment_intents/"):], charge)
	}))
	t.Cleanup(srv.Close)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: "sk_test_x", APIBase: srv.URL, HTTPClient: newClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	in, err := gw.RetrieveIntent(context.Background(), "pi_id")
	if err != nil {
		t.Fatal(err)
	}
	if in.LatestCharge == nil || *in.LatestCharge != (payrecon.Charge{ID: "ch_only_id"}) || in.LatestCharge.Expanded() {
		t.Fatalf("id-only charge: %+v", in.LatestCharge)
	}
	in, err = gw.RetrieveIntent(context.Background(), "pi_null")
	if err != nil {
		t.Fatal(err)
	}
	if in.LatestCharge != nil || in.LatestCharge.Expanded() {
		t.Fatalf("null charge: %+v", in.LatestCharge)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"expand[0]=latest_charge", "expand[0]=latest_charge"}; !slices.Equal(queries, want) {
		t.Errorf("queries %q, want %q", queries, want)
	}
}

// TestMissingChargePermission: a restricted key without Charges: Read
// stops the reads with a configuration error that names the permission.
func TestMissingChargePermission(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{Faults: stripesim.Faults{MissingPermissions: []string{stripesim.PermissionChargeRead}}}, nil)
	b.sim.Put(stripesim.Intent{ID: "pi_1", Status: payrecon.IntentSucceeded})
	_, err := b.gw.RetrieveIntent(context.Background(), "pi_1")
	if c := configError(t, err); c.StatusCode != 403 || c.Cause != "the restricted API key lacks the Charges: Read permission (Stripe: rak_charge_read); grant it to the key in the Stripe Dashboard (Developers > API keys) or set another key in STRIPE_SECRET_KEY" {
		t.Fatalf("cause %q", c.Cause)
	}
	_, err = b.gw.ListIntents(context.Background(), payrecon.ListQuery{})
	if c := configError(t, err); c.StatusCode != 403 || !strings.Contains(c.Cause, "Charges: Read") {
		t.Fatalf("list: cause %q", c.Cause)
	}
}
