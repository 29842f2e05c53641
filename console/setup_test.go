package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

const (
	password      = "correct horse battery staple"
	webhookSecret = "whsec_console_test"
)

// syncBuffer collects the service's logs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testBundle is a running payrecon service with findings of several kinds,
// found by its own sweep against the simulator.
type testBundle struct {
	pool     *pgxpool.Pool
	sim      *stripesim.Server
	svc      *service.Service
	admin    string // base URL of the admin listener
	public   string // base URL of the public listener
	logs     *syncBuffer
	payments map[string]int64 // PaymentIntent id → payment id
}

// The seeded scenario: each row is (intent, local status, Stripe status;
// "" = no intent in Stripe).
var scenario = [][3]string{
	{"pi_review_0", "paid", "canceled"}, {"pi_review_1", "paid", "canceled"}, {"pi_review_2", "paid", "requires_capture"},
	{"pi_review_3", "paid", "canceled"},
	{"pi_refund_0", "failed", "succeeded"}, {"pi_refund_1", "failed", "succeeded"},
	{"pi_gone_0", "pending", ""}, {"pi_gone_1", "pending", ""},
	{"pi_missed_0", "pending", "succeeded"}, {"pi_missed_1", "pending", "canceled"},
	{"pi_ok_0", "paid", "succeeded"}, {"pi_ok_1", "paid", "succeeded"}, {"pi_ok_2", "failed", "canceled"},
	{"pi_ok_3", "pending", "requires_payment_method"},
}

// The findings the scenario's first cycle opens (the two repairable ones
// are then repaired and resolved).
const scenarioFindings = 10

func serviceConfig(sim *stripesim.Server, pw string, logs io.Writer) service.Config {
	return service.Config{
		HTTPAddr:        "127.0.0.1:0",
		AdminAddr:       "127.0.0.1:0",
		ConsolePassword: pw,
		// A cheap key derivation, and room for the tests' many logins.
		Console:        console.Config{KDFIterations: 1000, LoginBurst: 100, LoginsPerMinute: 600},
		Sweep:          sweep.Config{Batch: 50, Grace: sweep.Off, Concurrency: 4, MinCycle: time.Hour, MaxOutage: time.Minute},
		Stripe:         stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL()},
		WebhookSecrets: []string{webhookSecret},
		Relay:          relay.Config{Workers: 2},
		Logger:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
}

// setup seeds the scenario, runs the service until its first cycle's
// findings are recorded and repaired, and stops it with the test.
func setup(t *testing.T, pw string) *testBundle {
	t.Helper()
	return setupMode(t, pw, payrecon.RepairApply)
}

// setupMode is setup with the service in repair mode mode: under review,
// it waits for the first cycle's repairs to be held instead of repaired.
func setupMode(t *testing.T, pw string, mode payrecon.RepairMode) *testBundle {
	t.Helper()
	pool := pgtest.NewDB(t)
	sim := simtest.Start(t, stripesim.Config{})
	b := &testBundle{pool: pool, sim: sim, logs: &syncBuffer{}, payments: map[string]int64{}}
	old := time.Now().Add(-2 * time.Hour)
	ps := make([]pgtest.Payment, len(scenario))
	for i, r := range scenario {
		ps[i] = pgtest.Payment{OrderID: "order-" + strings.TrimPrefix(r[0], "pi_"), IntentID: r[0], Status: payrecon.LocalStatus(r[1]),
			CreatedAt: old, UpdatedAt: old}
		if r[2] != "" {
			sim.Put(stripesim.Intent{ID: r[0], Status: payrecon.StripeStatus(r[2]), Created: old, Amount: 1250, Currency: "usd"})
		}
	}
	for i, id := range pgtest.InsertPayments(t, pool, ps) {
		b.payments[scenario[i][0]] = id
	}
	cfg := serviceConfig(sim, pw, b.logs)
	cfg.RepairMode = mode
	svc, err := service.New(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.svc = svc
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service stopped with %v", err)
		}
	})
	testkit.WaitFor(t, "the service to listen", 30*time.Second, func() bool { return svc.AdminAddr() != "" && svc.Addr() != "" })
	b.admin, b.public = "http://"+svc.AdminAddr(), "http://"+svc.Addr()
	testkit.WaitFor(t, "the first cycle's findings, repaired (or held)", 60*time.Second, func() bool {
		unprocessed := "SELECT count(*) FROM outbox WHERE processed_at IS NULL"
		want := 0
		if mode.Holds() {
			unprocessed, want = "SELECT count(*) FROM outbox WHERE processed_at IS NULL AND held_at IS NOT NULL", 2
		}
		return pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings") == scenarioFindings &&
			pgtest.Count(t, pool, unprocessed) == want
	})
	// What the money checks (migration 00008) record: amounts on three of
	// the four findings of one kind, in two currencies.
	pgtest.Exec(t, pool, `UPDATE reconciliation_findings f SET details = jsonb_build_object('amount', 1250, 'amount_received', 0,
		'currency', CASE WHEN p.stripe_payment_intent_id = 'pi_review_2' THEN 'eur' ELSE 'usd' END, 'charge', jsonb_build_object('refunded', false))
		FROM payments p WHERE p.id = f.payment_id AND p.stripe_payment_intent_id IN ('pi_review_0', 'pi_review_1', 'pi_review_2')`)
	return b
}

// findingOf returns the id of the finding of a seeded PaymentIntent.
func (b *testBundle) findingOf(t *testing.T, intent string) int64 {
	t.Helper()
	var id int64
	err := b.pool.QueryRow(context.Background(), `SELECT f.id FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id
		WHERE p.stripe_payment_intent_id = $1 ORDER BY f.id DESC LIMIT 1`, intent).Scan(&id)
	if err != nil {
		t.Fatalf("finding of %s: %v", intent, err)
	}
	return id
}

// webhook delivers a signed Stripe event to the public listener.
func (b *testBundle) webhook(t *testing.T, eventID, typ, intent, status string) {
	t.Helper()
	payload := []byte(fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":%d,"api_version":"2020-08-27","data":{"object":{"id":%q,"object":"payment_intent","status":%q}}}`,
		eventID, typ, time.Now().Unix(), intent, status))
	req, _ := http.NewRequest(http.MethodPost, b.public+"/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, webhookSecret, time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("webhook %s = %d", eventID, resp.StatusCode)
	}
}

// client is an HTTP client that does not follow redirects, so tests see
// them.
func client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type response struct {
	status int
	header http.Header
	body   string
	cookie []*http.Cookie
}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(body), cookie: resp.Cookies()}
}

func get(t *testing.T, u string, cookies ...*http.Cookie) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return do(t, req)
}

func post(t *testing.T, u string, form url.Values, header http.Header, cookies ...*http.Cookie) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, vs := range header {
		req.Header[k] = vs
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return do(t, req)
}

// login logs in as name and returns the session cookie.
func login(t *testing.T, base, name string) *http.Cookie {
	t.Helper()
	r := post(t, base+"/console/login", url.Values{"password": {password}, "name": {name}}, nil)
	if r.status != http.StatusSeeOther {
		t.Fatalf("login = %d %s", r.status, r.body)
	}
	for _, c := range r.cookie {
		if c.Name == "payrecon_console" {
			return c
		}
	}
	t.Fatal("login set no session cookie")
	return nil
}

// csrfOf reads the CSRF token from a page.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := strings.Index(body, marker)
	if i < 0 {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	rest := body[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}
