package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// payrecon through the view of docs/payments-table.md, over an application
// table with other names, other status values and extra columns: migrate,
// a full scan, the repairs, a webhook through the running service, and the
// application's table ends right, in its own vocabulary.
func TestPaymentsViewRecipe(t *testing.T) {
	t.Parallel()
	url := pgtest.NewPaymentsViewURL(t)
	sim := simtest.Start(t, stripesim.Config{})
	env := map[string]string{"DATABASE_URL": url, "STRIPE_SECRET_KEY": sim.SecretKey(), "STRIPE_API_BASE": sim.URL()}
	pool := pgtestPool(t, url)

	old := time.Now().Add(-time.Hour)
	rows := []struct{ ref, state, stripe string }{
		{"o-1", "PENDING", "succeeded"},                // missed_success: the repair settles it
		{"o-2", "PENDING", "canceled"},                 // missed_cancel: the repair declines it
		{"o-3", "SETTLED", "succeeded"},                // in sync
		{"o-4", "DECLINED", "requires_payment_method"}, // in sync
		{"o-5", "SETTLED", "requires_payment_method"},  // paid_locally_not_externally: for a person
		{"o-6", "REFUNDED", "succeeded"},               // a status the view does not map: unknown_status
		{"o-7", "PENDING", "requires_payment_method"},  // in sync; then a webhook settles it
		{"o-8", "PENDING", ""},                         // missing_externally
	}
	for i, r := range rows {
		pi := fmt.Sprintf("pi_view_%d", i+1)
		pgtest.Exec(t, pool, `INSERT INTO shop.charges (reference, stripe_pi, state, amount_cents, inserted_at, modified_at)
			VALUES ($1, $2, $3, 1000, $4, $4)`, r.ref, pi, r.state, old)
		if r.stripe != "" {
			sim.Put(stripesim.Intent{ID: pi, Status: payrecon.StripeStatus(r.stripe), Created: old, Amount: 1000, Currency: "usd"})
		}
	}

	if r := runCLI(t, env, "migrate"); r.code != 0 || !strings.Contains(r.stdout, "only when payments is a table") {
		t.Fatalf("migrate through the view: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var scan struct {
		Scanned     int            `json:"scanned"`
		Counts      map[string]int `json:"counts"`
		NewFindings int            `json:"new_findings"`
		Commands    int            `json:"commands"`
		Wrapped     bool           `json:"wrapped"`
	}
	mustJSON(t, runCLI(t, env, "scan", "--once", "--json", "--batch", "3", "--rps", "0"), &scan)
	if scan.Scanned != 8 || !scan.Wrapped || scan.NewFindings != 5 || scan.Commands != 2 ||
		scan.Counts["in_sync"] != 3 || scan.Counts["repairable"] != 2 || scan.Counts["needs_review"] != 3 {
		t.Errorf("scan through the view = %+v", scan)
	}
	// Every row was read from Stripe (a 404 is an answer): each is verified
	// in the application's table, and nothing else changed.
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM shop.charges WHERE payrecon_reconciled_at IS NOT NULL
		AND payrecon_observed_status IS NOT NULL AND lock_version = 0 AND modified_at = $1`, old); n != 8 {
		t.Errorf("%d of 8 rows verified and otherwise untouched after the scan", n)
	}

	var drain struct {
		Applied int `json:"applied"`
	}
	mustJSON(t, runCLI(t, env, "relay", "--drain", "--json"), &drain)
	if drain.Applied != 2 {
		t.Errorf("relay --drain applied %d repairs, want 2", drain.Applied)
	}

	var findings []struct {
		ID   int64  `json:"id"`
		Kind string `json:"kind"`
	}
	mustJSON(t, runCLI(t, env, "findings", "list", "--json"), &findings)
	kinds := map[string]int64{}
	for _, f := range findings {
		kinds[f.Kind] = f.ID
	}
	if len(findings) != 3 || kinds["paid_locally_not_externally"] == 0 || kinds["unknown_status"] == 0 || kinds["missing_externally"] == 0 {
		t.Errorf("open findings after the repairs = %+v", findings)
	}
	if r := runCLI(t, env, "findings", "show", fmt.Sprint(kinds["paid_locally_not_externally"])); r.code != 0 ||
		!strings.Contains(r.stdout, "order o-5") || !strings.Contains(r.stdout, "paid") {
		t.Errorf("findings show through the view: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The service, with a webhook: payment_intent.succeeded settles o-7.
	addr := freeAddr(t)
	env["STRIPE_WEBHOOK_SECRET"] = "whsec_view"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--http-addr", addr, "--min-cycle", "1h", "--workers", "2"},
			func(k string) string { return env[k] }, &bytes.Buffer{}, &errb)
	}()
	testkit.WaitFor(t, "/readyz", 30*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned before it was ready: %v\n%s", err, errb.String())
		default:
		}
		code, _ := httpGet("http://" + addr + "/readyz")
		return code == 200
	})
	sim.Put(stripesim.Intent{ID: "pi_view_7", Status: payrecon.IntentSucceeded, Created: old, Amount: 1000, Currency: "usd"})
	payload := []byte(fmt.Sprintf(`{"id":"evt_view_1","object":"event","type":"payment_intent.succeeded","created":%d,"api_version":"2020-08-27","data":{"object":{"id":"pi_view_7","object":"payment_intent","status":"succeeded"}}}`, time.Now().Unix()))
	req, _ := http.NewRequest("POST", "http://"+addr+"/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, "whsec_view", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("webhook through the view = %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v\n%s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}

	// The application's table, in its own vocabulary.
	want := map[string]struct {
		state   string
		version int
	}{
		"o-1": {"SETTLED", 1}, "o-2": {"DECLINED", 1}, "o-3": {"SETTLED", 0}, "o-4": {"DECLINED", 0},
		"o-5": {"SETTLED", 0}, "o-6": {"REFUNDED", 0}, "o-7": {"SETTLED", 1}, "o-8": {"PENDING", 0},
	}
	for ref, w := range want {
		if n := pgtest.Count(t, pool, `SELECT count(*) FROM shop.charges WHERE reference = $1 AND state = $2 AND lock_version = $3`,
			ref, w.state, w.version); n != 1 {
			var state string
			var version int
			_ = pool.QueryRow(context.Background(), `SELECT state, lock_version FROM shop.charges WHERE reference = $1`, ref).Scan(&state, &version)
			t.Errorf("%s is %s version %d, want %s version %d", ref, state, version, w.state, w.version)
		}
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM stripe_webhook_events WHERE event_id = 'evt_view_1' AND outcome = 'applied'`); n != 1 {
		t.Error("the webhook is not recorded as applied")
	}
}

// migrate on a payments table it cannot work with: exit 2, one line naming
// what is wrong, and nothing created.
func TestMigrateRefusesAPaymentsTableItCannotUse(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyURL(t)
	pool := pgtestPool(t, url)
	pgtest.Exec(t, pool, `CREATE TYPE payment_state AS ENUM ('pending', 'paid', 'failed');
		CREATE TABLE payments (id bigint PRIMARY KEY, order_id text, stripe_payment_intent_id text,
		    status payment_state, version integer, created_at timestamp, updated_at timestamptz)`)
	r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	if r.code != 2 || !strings.HasPrefix(last, "payrecon: cannot reconcile public.payments (table): ") ||
		!strings.Contains(last, "status is payment_state") || !strings.Contains(last, "created_at is timestamp without time zone") {
		t.Errorf("exit %d, last line %q", r.code, last)
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM pg_class WHERE relname IN ('payrecon_schema_migrations', 'outbox', 'river_job')`); n != 0 {
		t.Errorf("a refused migrate created %d of payrecon's tables", n)
	}
}
