package stripesim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testBundle is a simulator, its clock and a client of the test's own.
type testBundle struct {
	sim    *stripesim.Server
	clock  *testkit.Clock
	client *http.Client
}

// setup starts a simulator on a fake clock (unless cfg has a clock).
func setup(t testing.TB, cfg stripesim.Config) *testBundle {
	t.Helper()
	clock := testkit.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if cfg.Clock == nil {
		cfg.Clock = clock
	}
	sim := simtest.Start(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &testBundle{sim: sim, clock: clock, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// get sends GET path with the simulator's key.
func (b *testBundle) get(t testing.TB, path string) response {
	t.Helper()
	return b.getAuth(t, path, "Bearer "+b.sim.SecretKey())
}

// getAuth sends GET path with the given Authorization header ("" for none).
func (b *testBundle) getAuth(t testing.TB, path, auth string) response {
	t.Helper()
	return b.getAs(t, path, auth, "")
}

// getAs sends GET path with the given Authorization and Stripe-Account
// headers ("" for none).
func (b *testBundle) getAs(t testing.TB, path, auth, account string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.sim.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if account != "" {
		req.Header.Set("Stripe-Account", account)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func (r response) object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
	return m
}

// stripeError returns the "error" object of a Stripe error body.
func (r response) stripeError(t testing.TB) map[string]any {
	t.Helper()
	e, ok := r.object(t)["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", r.body)
	}
	return e
}

// list is a decoded list body.
type list struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
	URL     string            `json:"url"`
}

func (r response) list(t testing.TB) list {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var l list
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("decode list: %v", err)
	}
	if l.Object != "list" {
		t.Fatalf("object = %q", l.Object)
	}
	return l
}

// ids returns the "id" of each item of a list.
func (l list) ids(t testing.TB) []string {
	t.Helper()
	out := make([]string, 0, len(l.Data))
	for _, raw := range l.Data {
		var x struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x.ID)
	}
	return out
}
