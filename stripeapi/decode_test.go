package stripeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

// The slim decoder must read exactly what stripe-go's typed structs read,
// field by field, for every answer Stripe may send: the property test below
// generates PaymentIntents and list pages of every shape (each status and
// unknown ones, amounts from 0 to the int64 limits, times outside the range
// payrecon accepts, metadata absent, null, empty or odd, the charge absent,
// null, an id, an empty id, or an object with or without object and created,
// every field Stripe adds that payrecon does not read, keys in any order)
// and decodes each both ways.

// jsonGen writes random Stripe-shaped JSON.
type jsonGen struct{ r *rand.Rand }

func (g jsonGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g jsonGen) str() string {
	return g.pick(`""`, `"x"`, `"pi_3Q"`, `"Ünïcødé"`, `"quote \" and \\ backslash"`, `"\u00e9\n\t"`, `"`+strings.Repeat("a", 300)+`"`)
}

func (g jsonGen) int() string {
	return g.pick("0", "1", "1000", "-1", "2147483648", strconv.FormatInt(math.MaxInt64, 10), strconv.FormatInt(math.MinInt64, 10),
		strconv.FormatInt(g.r.Int64N(1<<40), 10))
}

func (g jsonGen) time() string {
	return g.pick("0", "-5", "1700000000", strconv.FormatInt(maxUnixSeconds, 10), strconv.FormatInt(maxUnixSeconds+1, 10),
		strconv.FormatInt(1_500_000_000+g.r.Int64N(300_000_000), 10))
}

// extra is a value of a field payrecon does not read: anything JSON holds.
func (g jsonGen) extra(depth int) string {
	switch n := g.r.IntN(8); {
	case n == 0:
		return "null"
	case n == 1:
		return g.pick("true", "false")
	case n == 2:
		return g.int()
	case n == 3:
		return "1.5e3"
	case n == 4 && depth < 3:
		return "[" + g.extra(depth+1) + "," + g.extra(depth+1) + "]"
	case n == 5 && depth < 3:
		return `{"object":"card","brand":` + g.str() + `,"nested":` + g.extra(depth+1) + `}`
	}
	return g.str()
}

// object renders fields in random order, with a few extra ones.
func (g jsonGen) object(fields []string) string {
	for range g.r.IntN(4) {
		fields = append(fields, fmt.Sprintf(`"unknown_%d":%s`, g.r.IntN(1000), g.extra(0)))
	}
	g.r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return "{" + strings.Join(fields, ",") + "}"
}

// maybe keeps a field with probability 7/8.
func (g jsonGen) maybe(fields []string, key, value string) []string {
	if g.r.IntN(8) == 0 {
		return fields
	}
	return append(fields, `"`+key+`":`+value)
}

func (g jsonGen) metadata() string {
	switch g.r.IntN(5) {
	case 0:
		return "null"
	case 1:
		return "{}"
	}
	var kv []string
	for range 1 + g.r.IntN(3) {
		kv = append(kv, g.str()+":"+g.str())
	}
	return "{" + strings.Join(kv, ",") + "}"
}

func (g jsonGen) charge() string {
	switch g.r.IntN(6) {
	case 0:
		return "null"
	case 1:
		return g.pick(`"ch_3QidOnly"`, `""`)
	}
	var f []string
	f = g.maybe(f, "id", g.pick(`"ch_3Q"`, `""`, g.str()))
	f = g.maybe(f, "object", g.pick(`"charge"`, `""`))
	f = g.maybe(f, "amount", g.int())
	f = g.maybe(f, "amount_captured", g.int())
	f = g.maybe(f, "amount_refunded", g.int())
	f = g.maybe(f, "refunded", g.pick("true", "false"))
	f = g.maybe(f, "disputed", g.pick("true", "false"))
	f = g.maybe(f, "captured", g.pick("true", "false"))
	f = g.maybe(f, "currency", g.pick(`"usd"`, `"JPY"`, `"eur"`, `""`))
	f = g.maybe(f, "created", g.time())
	f = g.maybe(f, "payment_intent", g.pick(`"pi_3Q"`, "null"))
	f = g.maybe(f, "outcome", `{"network_status":"approved_by_network","risk_level":"normal","type":"authorized"}`)
	f = g.maybe(f, "payment_method_details", `{"card":{"brand":"visa","last4":"4242","checks":{"cvc_check":"pass"}},"type":"card"}`)
	f = g.maybe(f, "refunds", `{"object":"list","data":[],"has_more":false,"url":"/v1/charges/ch_3Q/refunds"}`)
	f = g.maybe(f, "metadata", g.metadata())
	return g.object(f)
}

func (g jsonGen) intent() string {
	statuses := append(slices.Clone(payrecon.StripeStatuses), "requires_source", "", "brand_new_status", "Succeeded", "PROCESSING")
	var f []string
	f = g.maybe(f, "id", g.pick(`"pi_3Q"`, `""`, g.str()))
	f = g.maybe(f, "object", `"payment_intent"`)
	f = g.maybe(f, "status", `"`+string(statuses[g.r.IntN(len(statuses))])+`"`)
	f = g.maybe(f, "created", g.time())
	f = g.maybe(f, "amount", g.int())
	f = g.maybe(f, "amount_received", g.int())
	f = g.maybe(f, "amount_capturable", g.int())
	f = g.maybe(f, "currency", g.pick(`"usd"`, `"JPY"`, `"eur"`, `""`))
	f = g.maybe(f, "metadata", g.metadata())
	f = g.maybe(f, "latest_charge", g.charge())
	f = g.maybe(f, "canceled_at", g.pick("null", g.time()))
	f = g.maybe(f, "last_payment_error", g.pick("null", `{"code":"card_declined","message":"Your card was declined.","type":"card_error"}`))
	f = g.maybe(f, "payment_method_types", `["card","link"]`)
	f = g.maybe(f, "livemode", g.pick("true", "false"))
	f = g.maybe(f, "client_secret", g.str())
	return g.object(f)
}

func (g jsonGen) page() string {
	var data []string
	for range g.r.IntN(6) {
		data = append(data, g.intent())
	}
	return g.object([]string{`"object":"list"`, `"data":[` + strings.Join(data, ",") + `]`,
		`"has_more":` + g.pick("true", "false"), `"url":"/v1/payment_intents"`})
}

// TestDecodersAgree is the property test: for 5,000 generated intents and
// 1,000 generated list pages, the slim decoder and stripe-go's typed
// structs give the same payrecon.Intent, and fail on the same answers.
func TestDecodersAgree(t *testing.T) {
	t.Parallel()
	g := jsonGen{rand.New(rand.NewPCG(20, 1))}
	for i := range 5000 {
		body := []byte(g.intent())
		slim, serr := decodeIntent(body)
		typed, terr := typedDecodeIntent(body)
		if (serr == nil) != (terr == nil) {
			t.Fatalf("case %d: slim error %v, typed error %v\n%s", i, serr, terr, body)
		}
		if !reflect.DeepEqual(slim, typed) {
			t.Fatalf("case %d: decoders disagree\nslim  %+v\ntyped %+v\n%s", i, slim, typed, body)
		}
	}
	for i := range 1000 {
		body := []byte(g.page())
		slim, serr := decodeIntentPage(body)
		typed, terr := typedDecodeIntentPage(body)
		if (serr == nil) != (terr == nil) {
			t.Fatalf("page %d: slim error %v, typed error %v\n%s", i, serr, terr, body)
		}
		if !reflect.DeepEqual(slim, typed) {
			t.Fatalf("page %d: decoders disagree\nslim  %+v\ntyped %+v\n%s", i, slim, typed, body)
		}
	}
}

// TestDecodersAgreeOnEdges pins the shapes where the two could part: the
// charge as an id (the one-pass decode refuses it and the second one reads
// it), and malformed answers both refuse.
func TestDecodersAgreeOnEdges(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"id":"pi_1","status":"succeeded","latest_charge":"ch_1"}`,
		`{"id":"pi_1","status":"succeeded","latest_charge":""}`,
		`{"id":"pi_1","status":"succeeded","latest_charge":null}`,
		`{"id":"pi_1","status":"succeeded","latest_charge":{"id":"ch_1"}}`,
		`{"id":"pi_1","status":"succeeded","latest_charge":{"id":"ch_1","created":5}}`,
		`{"id":"pi_1","latest_charge":"ch_1","amount":"12"}`,
		`{"id":"pi_1","latest_charge":7}`,
		`{"id":"pi_1","metadata":{"a":1}}`,
		`{"id":"pi_1","amount":1e3}`,
		`{"id":"pi_1","amount":99999999999999999999}`,
		`{"ID":"pi_case","STATUS":"succeeded","Amount_Received":5}`,
		`{"id":"pi_1","id":"pi_2"}`,
		`{"id":"pi_1"`,
		`not json`,
		`[]`,
		`null`,
	} {
		slim, serr := decodeIntent([]byte(body))
		typed, terr := typedDecodeIntent([]byte(body))
		if (serr == nil) != (terr == nil) || !reflect.DeepEqual(slim, typed) {
			t.Errorf("%s:\nslim  %+v (%v)\ntyped %+v (%v)", body, slim, serr, typed, terr)
		}
		page := `{"object":"list","has_more":true,"data":[` + body + `]}`
		sp, serr := decodeIntentPage([]byte(page))
		tp, terr := typedDecodeIntentPage([]byte(page))
		if (serr == nil) != (terr == nil) || !reflect.DeepEqual(sp, tp) {
			t.Errorf("page of %s:\nslim  %+v (%v)\ntyped %+v (%v)", body, sp, serr, tp, terr)
		}
	}
	in, err := decodeIntent([]byte(`{"id":"pi_1","status":"succeeded","latest_charge":"ch_1"}`))
	if err != nil || in.LatestCharge == nil || in.LatestCharge.ID != "ch_1" || in.LatestCharge.Expanded() {
		t.Errorf("a charge sent as an id: %+v %v", in.LatestCharge, err)
	}
}

// FuzzDecoders: whatever a JSON object holds, when stripe-go's typed
// structs read it the slim decoder reads the same. (Where the typed path
// fails on a field payrecon does not read, the slim decoder may succeed:
// it is never stricter.) Seeded from the generator; the corpus is in
// testdata/fuzz.
func FuzzDecoders(f *testing.F) {
	g := jsonGen{rand.New(rand.NewPCG(7, 7))}
	for range 20 {
		f.Add([]byte(g.intent()))
	}
	f.Add([]byte(`{"id":"pi_1","latest_charge":"ch_1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if b := bytes.TrimSpace(body); len(b) == 0 || b[0] != '{' {
			return // Stripe answers objects; a bare string is an id to stripe-go, never an answer
		}
		typed, terr := typedDecodeIntent(body)
		if terr != nil {
			return
		}
		slim, serr := decodeIntent(body)
		if serr != nil || !reflect.DeepEqual(slim, typed) {
			t.Fatalf("slim %+v (%v), typed %+v\n%q", slim, serr, typed, body)
		}
		page := append(append([]byte(`{"has_more":false,"data":[`), body...), ']', '}')
		tp, terr := typedDecodeIntentPage(page)
		if terr != nil {
			return
		}
		sp, serr := decodeIntentPage(page)
		if serr != nil || !reflect.DeepEqual(sp, tp) {
			t.Fatalf("page: slim %+v (%v), typed %+v\n%q", sp, serr, tp, page)
		}
	})
}

// TestRawRequestsAreTheTypedOnes: the raw path sends exactly the requests
// the typed client sent (method, path, query, and the headers that
// authenticate and pin the API version), for a retrieve, a list page with
// every filter, and the access check's list without the expansion.
func TestRawRequestsAreTheTypedOnes(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s auth=%q version=%q ua=%q", r.Method, r.URL.RequestURI(),
			r.Header.Get("Authorization"), r.Header.Get("Stripe-Version"), r.Header.Get("User-Agent")))
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/v1/payment_intents/") {
			_, _ = w.Write([]byte(`{"id":"pi_x","object":"payment_intent","status":"succeeded"}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[],"has_more":false}`))
	}))
	t.Cleanup(srv.Close)
	g, err := New(Config{SecretKey: "sk_test_same", APIBase: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q := payrecon.ListQuery{CreatedGTE: time.Unix(100, 0), CreatedLTE: time.Unix(200, 0), StartingAfter: "pi_after", Limit: 100}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
	for _, id := range []string{"pi_x", "pi_a/b c?d"} {
		if _, err := g.RetrieveIntent(ctx, id); err != nil {
			t.Fatal(err)
		}
		raw := take()
		if _, err := TypedRetrieveIntent(g, ctx, id); err != nil {
			t.Fatal(err)
		}
		if typed := take(); !slices.Equal(raw, typed) {
			t.Errorf("retrieve %q:\nraw   %v\ntyped %v", id, raw, typed)
		}
	}
	if _, err := g.ListIntents(ctx, q); err != nil {
		t.Fatal(err)
	}
	raw := take()
	if _, err := TypedListIntents(g, ctx, q); err != nil {
		t.Fatal(err)
	}
	if typed := take(); !slices.Equal(raw, typed) {
		t.Errorf("list:\nraw   %v\ntyped %v", raw, typed)
	}
	if _, err := g.listIntents(ctx, payrecon.ListQuery{Limit: 1}, false); err != nil {
		t.Fatal(err)
	}
	if got, want := take(), `GET /v1/payment_intents?limit=1 auth="Bearer sk_test_same"`; len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("access check list: %v, want %s…", got, want)
	}
}

// BenchmarkDecode: one PaymentIntent with its expanded charge as the
// simulator renders it, and a page of 100, decoded by stripe-go's typed
// structs (with its list's second and third parse of each page: every
// element's own raw JSON) and by the slim decoder, and the intent without
// its charge expanded (as the first wave read it) by the typed structs: the
// CPU per intent the second wave's charge expansion costs, and what slim
// decoding saves.
//
//	go test -run '^$' -bench Decode -benchmem ./stripeapi
func BenchmarkDecode(b *testing.B) {
	one := []byte(`{"id":"pi_3QbenchAAAAAAAAAAAAAAAAA","object":"payment_intent","amount":1000,"amount_capturable":0,` +
		`"amount_received":1000,"automatic_payment_methods":{"enabled":true},"canceled_at":null,"cancellation_reason":null,` +
		`"capture_method":"automatic","client_secret":"pi_3Qbench_secret_sim","confirmation_method":"automatic",` +
		`"created":1700000000,"currency":"usd","customer":null,"description":null,"last_payment_error":null,` +
		`"latest_charge":{"id":"ch_3QbenchAAAAAAAAAAAAAAAAA","object":"charge","amount":1000,"amount_captured":1000,` +
		`"amount_refunded":0,"balance_transaction":"txn_3Qbench","captured":true,"created":1700000000,"currency":"usd",` +
		`"disputed":false,"metadata":{},"paid":true,"payment_intent":"pi_3QbenchAAAAAAAAAAAAAAAAA","refunded":false,` +
		`"refunds":{"object":"list","data":[],"has_more":false,"url":"/v1/charges/ch_3Qbench/refunds"},"status":"succeeded"},` +
		`"livemode":false,"metadata":{},"payment_method":"pm_3Qbench","payment_method_types":["card"],"status":"succeeded"}`)
	// The same intent as the first wave read it: the charge not expanded.
	bare := regexp.MustCompile(`"latest_charge":\{.*?"status":"succeeded"\},`).ReplaceAll(one, []byte(`"latest_charge":"ch_3QbenchAAAAAAAAAAAAAAAAA",`))
	page := []byte(`{"object":"list","has_more":true,"url":"/v1/payment_intents","data":[` +
		strings.TrimSuffix(strings.Repeat(string(one)+",", 100), ",") + `]}`)
	typedPage := func(body []byte) error {
		if _, err := typedDecodeIntentPage(body); err != nil {
			return err
		}
		// stripe-go's list then parses the page twice more to give each
		// element its own LastResponse (maybeAddLastResponseV1).
		var raw struct {
			Data []json.RawMessage `json:"data"`
		}
		return json.Unmarshal(body, &raw)
	}
	for _, c := range []struct {
		name string
		body []byte
		per  int
		dec  func([]byte) error
	}{
		{"retrieve/typed-charge-not-expanded", bare, 1, func(b []byte) error { _, err := typedDecodeIntent(b); return err }},
		{"retrieve/typed", one, 1, func(b []byte) error { _, err := typedDecodeIntent(b); return err }},
		{"retrieve/slim", one, 1, func(b []byte) error { _, err := decodeIntent(b); return err }},
		{"list-page/typed", page, 100, typedPage},
		{"list-page/slim", page, 100, func(b []byte) error { _, err := decodeIntentPage(b); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.dec(c.body); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.per)/1e3, "µs/intent")
		})
	}
}
