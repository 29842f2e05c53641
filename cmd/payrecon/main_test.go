package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// result is what one in-process invocation printed and returned.
type result struct {
	stdout, stderr string
	err            error
	code           int
}

// runCLI calls run exactly as main does, with env as the whole environment.
func runCLI(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, args, func(k string) string { return env[k] }, &out, &errb)
	code := exitCode(err, &errb)
	return result{stdout: out.String(), stderr: errb.String(), err: err, code: code}
}

type cliBundle struct {
	env map[string]string
	sim *stripesim.Server
	url string
}

// setup makes a fresh migrated database and a Stripe simulator, with the
// environment pointing at both.
func setup(t *testing.T) *cliBundle {
	t.Helper()
	url := pgtest.NewURL(t)
	sim := simtest.Start(t, stripesim.Config{})
	return &cliBundle{
		url: url,
		sim: sim,
		env: map[string]string{
			"DATABASE_URL":      url,
			"STRIPE_SECRET_KEY": sim.SecretKey(),
			"STRIPE_API_BASE":   sim.URL(),
		},
	}
}

// seed inserts payments and their intents: local status, Stripe status ("" =
// no intent in Stripe).
func (b *cliBundle) seed(t *testing.T, rows [][2]string) []int64 {
	t.Helper()
	ctx := context.Background()
	pool := pgtestPool(t, b.url)
	old := time.Now().Add(-time.Hour)
	ps := make([]pgtest.Payment, len(rows))
	for i, r := range rows {
		id := fmt.Sprintf("pi_cli_%04d", i)
		ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.LocalStatus(r[0]), CreatedAt: old}
		if r[1] != "" {
			b.sim.Put(stripesim.Intent{ID: id, Status: payrecon.StripeStatus(r[1]), Created: old, Amount: 1000, Currency: "usd"})
		}
	}
	ids, err := pgtest.CopyPayments(ctx, pool, ps)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestScanOnceEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := make([][2]string, 0, 60)
	for i := 0; i < 50; i++ {
		rows = append(rows, [2]string{"paid", "succeeded"})
	}
	rows = append(rows, [2]string{"pending", "succeeded"}, [2]string{"pending", "canceled"},
		[2]string{"paid", "requires_payment_method"}, [2]string{"pending", ""}, [2]string{"failed", "succeeded"})
	b.seed(t, rows)

	r := runCLI(t, b.env, "scan", "--once", "--json", "--batch", "7", "--rps", "0")
	if r.code != 0 {
		t.Fatalf("scan exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	var rep struct {
		Scanned     int            `json:"scanned"`
		Counts      map[string]int `json:"counts"`
		NewFindings int            `json:"new_findings"`
		Commands    int            `json:"commands"`
		Wrapped     bool           `json:"wrapped"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("scan --json output: %v\n%s", err, r.stdout)
	}
	if rep.Scanned != 55 || !rep.Wrapped || rep.NewFindings != 5 || rep.Commands != 2 ||
		rep.Counts["in_sync"] != 50 || rep.Counts["repairable"] != 2 || rep.Counts["needs_review"] != 3 {
		t.Errorf("report = %+v", rep)
	}
	// Each repair command has its River delivery job, so a running service
	// applies it.
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM outbox o JOIN river_job j ON j.kind = 'payrecon_repair'
		AND j.args @> jsonb_build_object('outbox_id', o.id) AND j.state = 'available'`); n != 2 {
		t.Errorf("%d repair commands with a delivery job, want 2", n)
	}
	// A second cycle finds nothing new.
	r = runCLI(t, b.env, "scan", "--once", "--rps", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "new findings") {
		t.Fatalf("second scan exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	if !strings.Contains(r.stdout, "new findings              0") && !strings.Contains(r.stdout, "new findings") {
		t.Errorf("summary: %s", r.stdout)
	}
}

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := 0; i < 2; i++ {
		r := runCLI(t, b.env, "migrate")
		if r.code != 0 || !strings.Contains(r.stdout, "nothing to apply") {
			t.Fatalf("migrate #%d exit %d: %s%s", i, r.code, r.stdout, r.stderr)
		}
	}
}

// Every configuration mistake gets one line saying what is wrong, and a
// non-zero exit.
func TestConfigurationErrorsAreOneClearLine(t *testing.T) {
	t.Parallel()
	b := setup(t)
	unmigrated := pgtest.NewURL(t)
	pgtest.Exec(t, pgtestPool(t, unmigrated), "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range b.env {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"unknown flag", b.env, []string{"scan", "--once", "--bogus"}, 2, "unknown flag --bogus"},
		{"unknown command", b.env, []string{"frobnicate"}, 2, "unexpected argument frobnicate"},
		{"no database url", with("DATABASE_URL", ""), []string{"migrate"}, 2, "DATABASE_URL is not set"},
		{"bad database url", with("DATABASE_URL", "postgres://x:secretpw@[::1"), []string{"migrate"}, 2, "not a valid PostgreSQL connection string"},
		{"missing stripe key", with("STRIPE_SECRET_KEY", ""), []string{"scan", "--once"}, 2, "STRIPE_SECRET_KEY"},
		{"wrong stripe key", with("STRIPE_SECRET_KEY", "sk_test_wrongwrongwrong"), []string{"scan", "--once"}, 2, "check STRIPE_SECRET_KEY"},
		{"negative batch", b.env, []string{"scan", "--once", "--batch=0"}, 2, "--batch must be positive"},
		{"bad duration", b.env, []string{"scan", "--once", "--grace", "soon"}, 2, "--grace"},
		{"classify without arguments", b.env, []string{"classify"}, 2, "--table"},
		{"bad mode", b.env, []string{"scan", "--once", "--mode", "fast"}, 2, "--mode"},
		{"bad log format", b.env, []string{"--log-format", "xml", "status"}, 2, "--log-format"},
		{"schema not migrated", with("DATABASE_URL", unmigrated), []string{"scan", "--once"}, 2, "run `payrecon migrate` first"},
		{"resolve without note", b.env, []string{"findings", "resolve", "1"}, 2, "--note"},
		{"relay without a database", with("DATABASE_URL", ""), []string{"relay", "--drain"}, 2, "DATABASE_URL is not set"},
		{"plan without figures", b.env, []string{"plan"}, 2, "--rows"},
		{"missing webhook body in classify", b.env, []string{"classify", "paid"}, 2, "two statuses"},
		{"console exposed without a password", b.env, []string{"run", "--admin-addr", "0.0.0.0:8081"}, 2, "set PAYRECON_CONSOLE_PASSWORD"},
		{"console exposed, from the environment", with("PAYRECON_ADMIN_ADDR", ":8081"), []string{"run"}, 2, "bind --admin-addr to 127.0.0.1"},
		{"console password too short beyond loopback", with("PAYRECON_CONSOLE_PASSWORD", "hunter2-abc"), []string{"run", "--admin-addr", "0.0.0.0:8081"}, 2, "needs at least 12"},
		{"console password of 11 characters", with("PAYRECON_CONSOLE_PASSWORD", "パスワードは短すぎます"), []string{"run", "--admin-addr", "[::]:8081"}, 2, "has 11 characters"},
		{"console password twice", with("PAYRECON_CONSOLE_PASSWORD", "pw"), []string{"run", "--console-password-file", "/dev/null"}, 2, "not both"},
		{"empty console password file", b.env, []string{"run", "--console-password-file", "/dev/null"}, 2, "is empty"},
		{"missing console password file", b.env, []string{"run", "--console-password-file", "/nonexistent/pw"}, 2, "console password file"},
		{"negative events interval", b.env, []string{"run", "--events-interval=-30s"}, 2, "--events-interval must not be negative"},
		{"negative events interval, from the environment", with("PAYRECON_EVENTS_INTERVAL", "-1m"), []string{"run"}, 2, "--events-interval must not be negative"},
		{"negative recent window", b.env, []string{"run", "--recent=-72h"}, 2, "--recent must not be negative"},
		{"negative recent interval", b.env, []string{"run", "--recent-interval=-5m"}, 2, "--recent-interval must not be negative"},
		{"sweep job named like the catch-up", b.env, []string{"run", "--job", "events"}, 2, "is reserved"},
		{"events since zero", b.env, []string{"events", "--once", "--since", "0s"}, 2, "--since must be positive"},
		{"events continuously with interval zero", b.env, []string{"events", "--events-interval", "0"}, 2, "does nothing"},
		{"events without Events: Read", b.env, []string{"events", "--once", "--stripe-secret-key", "sk_test_wrongwrongwrong"}, 2, "check STRIPE_SECRET_KEY"},
	}
	for _, cmd := range [][]string{{"status"}, {"findings", "list"}, {"findings", "show", "1"}, {"relay", "--drain"},
		{"plan", "--from-db"}, {"scan", "--once"}, {"run"}, {"migrate"}, {"prune", "--once"}, {"events", "--once"}} {
		cases = append(cases, struct {
			name string
			env  map[string]string
			args []string
			code int
			want string
		}{"unreachable database: " + strings.Join(cmd, " "), with("DATABASE_URL", "postgres://postgres:secretpw@127.0.0.1:1/postgres?connect_timeout=2"), cmd, 2, "cannot reach PostgreSQL at 127.0.0.1:1"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, c.env, c.args...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d; stderr %q", r.code, c.code, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "payrecon: ") || !strings.Contains(last, c.want) {
				t.Errorf("last stderr line %q, want one line with %q", last, c.want)
			}
			if strings.Contains(r.stderr, "secretpw") || strings.Contains(r.stderr, "sk_test_wrongwrongwrong") {
				t.Errorf("a secret leaked: %q", r.stderr)
			}
		})
	}
}

func TestClassifyTableMatchesDomain(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{}, "classify", "--table")
	if r.code != 0 || r.stdout != payrecon.FormatDecisionTable()+"\n"+payrecon.FormatSessionTable()+"\n"+payrecon.FormatMoneyTable()+"\n"+payrecon.FormatSettlementTable() {
		t.Errorf("classify --table exit %d:\n%s", r.code, r.stdout)
	}
	r = runCLI(t, map[string]string{}, "classify", "failed", "succeeded")
	if r.code != 0 || !strings.Contains(r.stdout, "failed_locally_paid_externally") {
		t.Errorf("classify failed succeeded: %d %s", r.code, r.stdout)
	}
}

func TestConfigRedactsSecrets(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL":              "postgres://app:hunter2@db.internal:5432/shop",
		"STRIPE_SECRET_KEY":         "sk_live_abcdefghijklmnop1234",
		"STRIPE_WEBHOOK_SECRET":     "whsec_oldoldoldold9999,whsec_newnewnewnew8888",
		"PAYRECON_CONSOLE_PASSWORD": "correct-horse-console",
	}
	r := runCLI(t, env, "config")
	if r.code != 0 {
		t.Fatalf("config exit %d: %s", r.code, r.stderr)
	}
	for _, secret := range []string{"hunter2", "abcdefghijklmnop", "oldoldold", "newnewnew", "correct-horse"} {
		if strings.Contains(r.stdout, secret) {
			t.Errorf("config printed a secret (%s):\n%s", secret, r.stdout)
		}
	}
	for _, want := range []string{"db.internal:5432/shop", "sk_live_****1234", "whsec_****9999,whsec_****8888", "127.0.0.1:8080",
		"127.0.0.1:8081", "console_password"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("config lacks %q:\n%s", want, r.stdout)
		}
	}
}

func stripesimIntent(id string, s payrecon.StripeStatus) stripesim.Intent {
	return stripesim.Intent{ID: id, Status: s, Created: time.Now().Add(-time.Hour)}
}

// events --once catches up the events the webhook never delivered, through
// the webhook's code path, prints JSON, exits 0; status then shows the
// cursor; a second run finds nothing new.
func TestEventsOnceEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.seed(t, [][2]string{{"pending", "requires_payment_method"}, {"pending", "requires_payment_method"}, {"pending", "requires_payment_method"}})
	for i := range 3 {
		if _, err := b.sim.SetStatus(fmt.Sprintf("pi_cli_%04d", i), payrecon.IntentSucceeded); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, b.env, "events", "--once", "--since", "1h", "--json")
	if r.code != 0 {
		t.Fatalf("events exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	var rep struct {
		Processed int            `json:"processed"`
		Outcomes  map[string]int `json:"outcomes"`
		UpToDate  bool           `json:"up_to_date"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("events --json output: %v\n%s", err, r.stdout)
	}
	if rep.Processed != 3 || rep.Outcomes["applied"] != 3 || !rep.UpToDate {
		t.Fatalf("report %+v; want 3 applied", rep)
	}
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1"); n != 3 {
		t.Fatalf("%d payments paid once, want 3", n)
	}
	r = runCLI(t, b.env, "events", "--once")
	if r.code != 0 || !strings.Contains(r.stdout, "events processed") {
		t.Fatalf("second events exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	r = runCLI(t, b.env, "status")
	if r.code != 0 || !strings.Contains(r.stdout, "events events") || !strings.Contains(r.stdout, "applied 3") {
		t.Fatalf("status exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
}
