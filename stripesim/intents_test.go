package stripesim_test

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
)

func TestRetrieveIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b.sim.Put(stripesim.Intent{ID: "pi_1", Amount: 4200, Currency: "eur", Status: payrecon.IntentSucceeded, Created: created})

	r := b.get(t, "/v1/payment_intents/pi_1")
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r.header.Get("Request-Id") == "" {
		t.Error("no Request-Id header")
	}
	got := r.object(t)
	want := map[string]any{
		"id": "pi_1", "object": "payment_intent", "amount": 4200.0, "currency": "eur",
		"status": "succeeded", "created": float64(created.Unix()), "livemode": false,
		"amount_received": 4200.0, "capture_method": "automatic",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if md, ok := got["metadata"].(map[string]any); !ok || len(md) != 0 {
		t.Errorf("metadata = %#v, want {}", got["metadata"])
	}
}

func TestRetrieveMissingIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_gone"})
	if err := b.sim.Delete("pi_gone"); err != nil {
		t.Fatal(err)
	}
	if err := b.sim.Delete("pi_gone"); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Fatalf("second Delete: %v", err)
	}

	for _, id := range []string{"pi_x", "pi_gone"} {
		r := b.get(t, "/v1/payment_intents/"+id)
		if r.status != http.StatusNotFound {
			t.Fatalf("%s: status %d", id, r.status)
		}
		reqID := r.header.Get("Request-Id")
		if reqID == "" {
			t.Error("no Request-Id header")
		}
		e := r.stripeError(t)
		want := map[string]any{
			"code":            "resource_missing",
			"doc_url":         "https://stripe.com/docs/error-codes/resource-missing",
			"message":         fmt.Sprintf("No such payment_intent: '%s'", id),
			"param":           "intent",
			"request_log_url": "https://dashboard.stripe.com/test/logs/" + reqID,
			"type":            "invalid_request_error",
		}
		for k, v := range want {
			if e[k] != v {
				t.Errorf("error.%s = %#v, want %#v", k, e[k], v)
			}
		}
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{SecretKey: "sk_test_right"})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	const path = "/v1/payment_intents/pi_1"

	tests := []struct {
		name, auth  string
		faults      stripesim.Faults
		wantStatus  int
		wantMessage string
	}{
		{"no key", "", stripesim.Faults{}, 401, "You did not provide an API key."},
		{"wrong key", "Bearer sk_test_wrongabcd", stripesim.Faults{}, 401, "Invalid API Key provided: sk_test_****abcd"},
		{"not bearer", "Basic c2s6", stripesim.Faults{}, 401, "Invalid API Key provided: "},
		{"revoked", "Bearer sk_test_right", stripesim.Faults{Unauthorized: true}, 401, "Invalid API Key provided: sk_test_****ight"},
		{"restricted", "Bearer sk_test_right", stripesim.Faults{Forbidden: true}, 403, "does not have the required permissions"},
		{"ok", "Bearer sk_test_right", stripesim.Faults{}, 200, ""},
	}
	for _, tt := range tests {
		// Sequential: the cases share the simulator's faults.
		b.sim.SetFaults(tt.faults)
		r := b.getAuth(t, path, tt.auth)
		if r.status != tt.wantStatus {
			t.Errorf("%s: status %d, want %d: %s", tt.name, r.status, tt.wantStatus, r.body)
			continue
		}
		if tt.wantStatus == 200 {
			continue
		}
		e := r.stripeError(t)
		if e["type"] != "invalid_request_error" {
			t.Errorf("%s: type %v", tt.name, e["type"])
		}
		if msg, _ := e["message"].(string); !strings.Contains(msg, tt.wantMessage) {
			t.Errorf("%s: message %q, want it to contain %q", tt.name, msg, tt.wantMessage)
		}
		if strings.Contains(string(r.body), "wrongabcd") {
			t.Errorf("%s: body repeats the key unmasked: %s", tt.name, r.body)
		}
	}
}

// seedGrid stores n intents pi_000… with created times that repeat in
// threes, so ties exercise the id tie-break, and returns them newest first.
func seedGrid(t testing.TB, sim *stripesim.Server, base time.Time, n int) []stripesim.Intent {
	t.Helper()
	all := make([]stripesim.Intent, n)
	for i := range all {
		all[i] = stripesim.Intent{ID: fmt.Sprintf("pi_%03d", i), Created: base.Add(time.Duration(i/3) * time.Second)}
	}
	if err := sim.Seed(n, func(i int) stripesim.Intent { return all[i] }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b stripesim.Intent) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return all
}

func idsOf(in []stripesim.Intent) []string {
	out := make([]string, len(in))
	for i, x := range in {
		out[i] = x.ID
	}
	return out
}

// walk pages through path (which has a query) with starting_after and
// returns every id and the number of requests.
func (b *testBundle) walk(t testing.TB, path string) ([]string, int) {
	t.Helper()
	var ids []string
	after, requests := "", 0
	for {
		p := path
		if after != "" {
			p += "&starting_after=" + url.QueryEscape(after)
		}
		l := b.get(t, p).list(t)
		requests++
		page := l.ids(t)
		ids = append(ids, page...)
		if !l.HasMore {
			return ids, requests
		}
		if len(page) == 0 {
			t.Fatal("has_more with an empty page")
		}
		after = page[len(page)-1]
	}
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want := idsOf(seedGrid(t, b.sim, base, 25))

	l := b.get(t, "/v1/payment_intents").list(t)
	if got := l.ids(t); !slices.Equal(got, want[:10]) || !l.HasMore || l.URL != "/v1/payment_intents" {
		t.Fatalf("default page: %v has_more=%v url=%q, want %v", got, l.HasMore, l.URL, want[:10])
	}

	got, requests := b.walk(t, "/v1/payment_intents?limit=10")
	if !slices.Equal(got, want) || requests != 3 {
		t.Fatalf("walk: %v in %d requests, want %v in 3", got, requests, want)
	}

	// ending_before returns the page just newer than the cursor, newest first.
	l = b.get(t, "/v1/payment_intents?limit=5&ending_before="+want[12]).list(t)
	if got := l.ids(t); !slices.Equal(got, want[7:12]) || !l.HasMore {
		t.Fatalf("ending_before: %v has_more=%v, want %v true", got, l.HasMore, want[7:12])
	}
	l = b.get(t, "/v1/payment_intents?limit=5&ending_before="+want[3]).list(t)
	if got := l.ids(t); !slices.Equal(got, want[:3]) || l.HasMore {
		t.Fatalf("ending_before near the top: %v has_more=%v, want %v false", got, l.HasMore, want[:3])
	}

	// The last page exactly full: has_more is false.
	l = b.get(t, "/v1/payment_intents?limit=5&starting_after="+want[19]).list(t)
	if got := l.ids(t); !slices.Equal(got, want[20:]) || l.HasMore {
		t.Fatalf("last page: %v has_more=%v", got, l.HasMore)
	}
}

func TestListCreatedFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	all := seedGrid(t, b.sim, base, 30) // created base+0 … base+9 s, three each
	at := func(s int) int64 { return base.Unix() + int64(s) }

	tests := []struct {
		query string
		keep  func(c int64) bool
	}{
		{fmt.Sprintf("created[gt]=%d", at(4)), func(c int64) bool { return c > at(4) }},
		{fmt.Sprintf("created[gte]=%d", at(4)), func(c int64) bool { return c >= at(4) }},
		{fmt.Sprintf("created[lt]=%d", at(4)), func(c int64) bool { return c < at(4) }},
		{fmt.Sprintf("created[lte]=%d", at(4)), func(c int64) bool { return c <= at(4) }},
		{fmt.Sprintf("created=%d", at(4)), func(c int64) bool { return c == at(4) }},
		{fmt.Sprintf("created[gte]=%d&created[lte]=%d", at(2), at(5)), func(c int64) bool { return c >= at(2) && c <= at(5) }},
		{fmt.Sprintf("created[gt]=%d&created[lt]=%d", at(2), at(5)), func(c int64) bool { return c > at(2) && c < at(5) }},
		{fmt.Sprintf("created[gte]=%d&created[lte]=%d", at(5), at(2)), func(int64) bool { return false }},
		{fmt.Sprintf("created[gte]=%d", at(100)), func(int64) bool { return false }},
		{fmt.Sprintf("created[lte]=%d", at(9)), func(int64) bool { return true }},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			var want []string
			for _, x := range all {
				if tt.keep(x.Created.Unix()) {
					want = append(want, x.ID)
				}
			}
			got, _ := b.walk(t, "/v1/payment_intents?limit=4&"+tt.query)
			if !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestListRejectsBadParameters(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	b.sim.Put(stripesim.Intent{ID: "pi_1"})
	tests := []struct{ query, param, code string }{
		{"limit=0", "limit", "parameter_invalid_integer"},
		{"limit=101", "limit", "parameter_invalid_integer"},
		{"limit=ten", "limit", "parameter_invalid_integer"},
		{"created[gte]=soon", "created[gte]", "parameter_invalid_integer"},
		{"customer_email=x", "customer_email", "parameter_unknown"},
		{"starting_after=pi_nope", "starting_after", "resource_missing"},
		{"starting_after=pi_1&ending_before=pi_1", "ending_before", "parameters_exclusive"},
	}
	for _, tt := range tests {
		r := b.get(t, "/v1/payment_intents?"+tt.query)
		if r.status != http.StatusBadRequest {
			t.Errorf("%s: status %d", tt.query, r.status)
			continue
		}
		e := r.stripeError(t)
		if e["param"] != tt.param || e["code"] != tt.code || e["type"] != "invalid_request_error" {
			t.Errorf("%s: error %v, want param %s code %s", tt.query, e, tt.param, tt.code)
		}
	}
	for _, limit := range []string{"1", "100"} {
		if r := b.get(t, "/v1/payment_intents?limit="+limit); r.status != http.StatusOK {
			t.Errorf("limit=%s: status %d", limit, r.status)
		}
	}
	if r := b.get(t, "/v1/payment_intents/pi_1?foo=1"); r.status != http.StatusBadRequest {
		t.Errorf("retrieve with an unknown parameter: status %d", r.status)
	}
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	r := b.get(t, "/v1/charges")
	if r.status != http.StatusNotFound {
		t.Fatalf("status %d", r.status)
	}
	e := r.stripeError(t)
	if msg, _ := e["message"].(string); !strings.HasPrefix(msg, "Unrecognized request URL (GET: /v1/charges)") || e["code"] != nil {
		t.Errorf("error %v", e)
	}
}

func TestStateMethods(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	in, err := b.sim.Create(stripesim.Intent{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(in.ID, "pi_") || len(in.ID) != 27 || in.Amount != 1000 || in.Currency != "usd" ||
		in.Status != payrecon.IntentRequiresPaymentMethod || !in.Created.Equal(b.clock.Now()) {
		t.Fatalf("defaults: %+v", in)
	}
	if _, err := b.sim.Create(stripesim.Intent{ID: in.ID}); !errors.Is(err, stripesim.ErrDuplicateID) {
		t.Fatalf("duplicate Create: %v", err)
	}
	if _, err := b.sim.SetStatus("pi_nope", payrecon.IntentSucceeded); !errors.Is(err, stripesim.ErrNoSuchIntent) {
		t.Fatalf("SetStatus of a missing intent: %v", err)
	}
	// Put replaces, also with a new created time, and the index follows.
	later := b.clock.Now().Add(time.Hour)
	b.sim.Put(stripesim.Intent{ID: in.ID, Created: later, Status: payrecon.IntentProcessing})
	got, ok := b.sim.Get(in.ID)
	if !ok || got.Status != payrecon.IntentProcessing || !got.Created.Equal(later) || b.sim.Count() != 1 {
		t.Fatalf("after Put: %+v %v count %d", got, ok, b.sim.Count())
	}
	if ids := b.get(t, fmt.Sprintf("/v1/payment_intents?created=%d", later.Unix())).list(t).ids(t); !slices.Equal(ids, []string{in.ID}) {
		t.Fatalf("list after Put: %v", ids)
	}
	if err := b.sim.Seed(2, func(i int) stripesim.Intent { return stripesim.Intent{ID: "pi_dup"} }); !errors.Is(err, stripesim.ErrDuplicateID) {
		t.Fatalf("Seed with a repeated id: %v", err)
	}
	if b.sim.Count() != 1 {
		t.Fatalf("a failed Seed stored intents: count %d", b.sim.Count())
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Config{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				id := fmt.Sprintf("pi_w%d_%d", w, i)
				b.sim.Put(stripesim.Intent{ID: id, Created: b.clock.Now().Add(time.Duration(i) * time.Second)})
				if _, err := b.sim.SetStatus(id, payrecon.IntentSucceeded); err != nil {
					t.Error(err)
				}
				b.clock.Advance(time.Millisecond)
			}
		})
		wg.Go(func() {
			for range 20 {
				if r := b.get(t, "/v1/payment_intents?limit=100"); r.status != http.StatusOK {
					t.Errorf("list: %d", r.status)
				}
				b.sim.Stats()
			}
		})
	}
	wg.Wait()
	if b.sim.Count() != 200 || len(b.sim.Events()) != 200 {
		t.Fatalf("count %d, events %d", b.sim.Count(), len(b.sim.Events()))
	}
	got, _ := b.walk(t, "/v1/payment_intents?limit=100")
	if len(got) != 200 {
		t.Fatalf("walk found %d", len(got))
	}
}

func TestSeedMany(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("seeds 200k intents")
	}
	b := setup(t, stripesim.Config{})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 200_000
	if err := b.sim.Seed(n, func(i int) stripesim.Intent {
		return stripesim.Intent{ID: fmt.Sprintf("pi_%07d", i), Created: base.Add(time.Duration(i) * time.Second)}
	}); err != nil {
		t.Fatal(err)
	}
	// The page around an arbitrary second deep in the index.
	mid := base.Add(123_456 * time.Second).Unix()
	ids := b.get(t, fmt.Sprintf("/v1/payment_intents?limit=3&created[lte]=%d", mid)).list(t).ids(t)
	if want := []string{"pi_0123456", "pi_0123455", "pi_0123454"}; !slices.Equal(ids, want) {
		t.Fatalf("got %v, want %v", ids, want)
	}
}
