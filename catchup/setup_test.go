package catchup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/httpapi"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// No test may leave a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// stripe-go's and net/http's idle connections close on their own.
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// testBundle is one test's real parts: a fresh database, the simulator, the
// stripe-go gateway on it, the webhook endpoint on the same processor the
// catch-up uses.
type testBundle struct {
	url     string
	pool    *pgxpool.Pool
	sim     *stripesim.Server
	gw      *stripeapi.Gateway
	clock   payrecon.Clock
	events  *postgres.Events
	cursors *postgres.EventCursors
	hookURL string
	seq     atomic.Int64
}

const hookSecret = "whsec_catchup_test"

// setup builds the bundle. clock (nil: the system clock) is the
// simulator's, the processor's and the catchers'.
func setup(t *testing.T, clock payrecon.Clock) *testBundle {
	t.Helper()
	if clock == nil {
		clock = payrecon.SystemClock{}
	}
	b := &testBundle{url: pgtest.NewURL(t), clock: clock}
	b.pool = b.newPool(t)
	b.sim = simtest.Start(t, stripesim.Config{Seed: 7, Clock: clock})
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: b.sim.SecretKey(), APIBase: b.sim.URL(),
		SleepFunc: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	if err != nil {
		t.Fatal(err)
	}
	b.gw = gw
	b.events = postgres.NewEvents(b.pool, postgres.NewWriter(clock), clock)
	b.cursors = postgres.NewEventCursors(b.pool)
	srv := httptest.NewServer(httpapi.NewServer(httpapi.Deps{
		Clock:   clock,
		Events:  b.events,
		Webhook: httpapi.WebhookConfig{Secrets: []string{hookSecret}, Tolerance: 365 * 24 * time.Hour},
	}))
	t.Cleanup(srv.Close)
	b.hookURL = srv.URL + "/webhooks/stripe"
	return b
}

// catcher builds a catcher on the bundle's real parts (no lease unless cfg
// has a LeaseFunc).
func (b *testBundle) catcher(cfg catchup.Config) *catchup.Catcher {
	if cfg.Clock == nil {
		cfg.Clock = b.clock
	}
	return mustNew(b.gw, b.events, b.cursors, cfg)
}

// payments inserts n pending payments with their intents in the simulator
// (awaiting payment, no event) and returns the intent ids.
func (b *testBundle) payments(t *testing.T, n int) []string {
	t.Helper()
	ps := make([]pgtest.Payment, n)
	ids := make([]string, n)
	for i := range ps {
		ids[i] = fmt.Sprintf("pi_%s_%06d", t.Name()[:min(len(t.Name()), 12)], b.seq.Add(1))
		ps[i] = pgtest.Payment{IntentID: ids[i], Status: payrecon.StatusPending, CreatedAt: b.clock.Now().Add(-time.Hour)}
		b.sim.Put(stripesim.Intent{ID: ids[i], Status: payrecon.IntentRequiresPaymentMethod, Amount: 1000, Currency: "usd"})
	}
	pgtest.InsertPayments(t, b.pool, ps)
	return ids
}

// move sets each intent's status in the simulator (recording its event).
func (b *testBundle) move(t *testing.T, ids []string, s payrecon.StripeStatus) []string {
	t.Helper()
	var evs []string
	for _, id := range ids {
		ev, err := b.sim.SetStatus(id, s)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// deliver delivers the simulator's pending events to the webhook endpoint,
// dropping each with probability drop, and returns the ids delivered.
func (b *testBundle) deliver(t *testing.T, drop float64) map[string]bool {
	t.Helper()
	b.sim.SetWebhook(stripesim.WebhookConfig{URL: b.hookURL, Secret: hookSecret, DropRate: drop})
	ds, err := b.sim.DeliverPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]bool{}
	for _, d := range ds {
		if d.Dropped {
			continue
		}
		if !d.OK() {
			t.Fatalf("webhook delivery of %s failed: status %d, %v", d.EventID, d.StatusCode, d.Err)
		}
		ok[d.EventID] = true
	}
	return ok
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return pgtest.Count(t, b.pool, sql, args...)
}

// state returns a payment's status and version by intent.
func (b *testBundle) state(t *testing.T, intent string) (payrecon.LocalStatus, int64) {
	t.Helper()
	var (
		s string
		v int64
	)
	if err := b.pool.QueryRow(context.Background(), "SELECT status, version FROM payments WHERE stripe_payment_intent_id = $1", intent).Scan(&s, &v); err != nil {
		t.Fatal(err)
	}
	return payrecon.LocalStatus(s), v
}

// listRequests counts the simulator's GET /v1/events requests.
func (b *testBundle) listRequests() int64 {
	return b.sim.Stats().Requests[stripesim.EndpointListEvents]
}

// newPool opens another pool on the test's database: a second process.
func (b *testBundle) newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), b.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// post delivers one event to the webhook endpoint, signed now, and returns
// the handler's answer.
func (b *testBundle) post(t *testing.T, eventID string) (outcome string, duplicate bool) {
	t.Helper()
	payload, err := b.sim.EventPayload(eventID)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, b.hookURL, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, hookSecret, b.clock.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res payrecon.EventResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook of %s answered %d (%v)", eventID, resp.StatusCode, err)
	}
	return res.Outcome, res.Duplicate
}
