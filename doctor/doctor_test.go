package doctor_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/doctor"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

const (
	key          = "rk_test_doctor_key"
	notifySecret = "notify-secret-doctor"
)

// receiver is a notification endpoint that verifies the signature with
// secret, as an application would.
func receiver(t *testing.T, secret string, status int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := payrecon.VerifyNotification(body, r.Header.Get(payrecon.SignatureHeader), secret, 5*time.Minute); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if !strings.Contains(string(body), `"type":"`+relay.NotificationTestType+`"`) {
			http.Error(w, "not a test delivery", http.StatusBadRequest)
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// base is an installation that passes every check: a migrated database
// with 100 payments created today, a simulator accepting a restricted key
// with every permission, a signing secret, a notification receiver, a
// loopback console, and a sweep whose reads fit the allocation.
func base(t *testing.T) (doctor.Config, *pgxpool.Pool, *stripesim.Server) {
	t.Helper()
	u := pgtest.NewURL(t)
	pool, err := pgxpool.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ps := make([]pgtest.Payment, 100)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_doctor_%d", i), Status: payrecon.StatusPaid}
	}
	pgtest.InsertPayments(t, pool, ps)
	sim := simtest.Start(t, stripesim.Config{SecretKey: key})
	return doctor.Config{
		DatabaseURL: u, Replicas: 1, DBMaxConns: 5,
		StripeSecretKey: key, Gateway: gateway(t, key, sim),
		RPS: 20, MinCycle: 24 * time.Hour, SweepMode: "list", EventsInterval: time.Hour, ReadShare: 0.5, PayoutsInterval: time.Hour,
		AmountColumn: "amount", CurrencyColumn: "currency", AccountColumn: "stripe_account_id", SessionColumn: "stripe_checkout_session_id",
		WebhookSecrets: "whsec_0123456789abcdefABCDEF",
		Notify:         relay.NotifyConfig{URL: receiver(t, notifySecret, http.StatusNoContent), Secret: notifySecret}, PingNotify: true,
		AdminAddr: "127.0.0.1:8081",
	}, pool, sim
}

func gateway(t *testing.T, key string, sim *stripesim.Server) *stripeapi.Gateway {
	t.Helper()
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: key, APIBase: sim.URL(), MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

func results(rep doctor.Report) map[string]doctor.Result {
	out := map[string]doctor.Result{}
	for _, r := range rep.Results {
		out[r.Check] = r
	}
	return out
}

// Every check passes on a sound installation, on a read-only database
// (default_transaction_read_only set on the database, as a replica or a
// cautious DBA would): doctor writes nothing.
func TestDoctorPassesOnReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	cfg, pool, _ := base(t)
	pgtest.Exec(t, pool, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$")
	pool.Reset() // new sessions take the setting
	var ro string
	if err := pool.QueryRow(context.Background(), "SHOW default_transaction_read_only").Scan(&ro); err != nil || ro != "on" {
		t.Fatalf("the database is not read-only: %q, %v", ro, err)
	}
	rep := doctor.Run(context.Background(), cfg)
	for _, r := range rep.Results {
		if r.Status != doctor.OK {
			t.Errorf("%s: %s: %s (fix: %s)", r.Check, r.Status, r.Detail, r.Fix)
		}
	}
	want := []string{"database", "migrations", "payments", "payments_indexes", "optional_columns", "connections", "clock_database",
		"read_allocation", "stripe_key", "permission PaymentIntents: Read", "permission Charges: Read", "permission Events: Read",
		"permission Payouts: Read, Balance: Read", "clock_stripe", "webhook_secret", "notify", "console_password"}
	got := results(rep)
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s check in %v", name, rep.Results)
		}
	}
	if rep.Failed != 0 || rep.Warned != 0 || len(rep.Results) != len(want) {
		t.Errorf("report: %d results, %d failed, %d warned", len(rep.Results), rep.Failed, rep.Warned)
	}
}

// skewedClock is the system clock shifted by offset.
type skewedClock struct{ offset time.Duration }

func (c skewedClock) Now() time.Time { return time.Now().Add(c.offset) }

// Each check's failing (or warning) case: the installation of base with
// one thing wrong, and the check that must say so, with a fix.
func TestDoctorFindsEachProblem(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		check  string
		status doctor.Status
		detail string // a part of the detail that says why
		break_ func(t *testing.T, cfg *doctor.Config, pool *pgxpool.Pool, sim *stripesim.Server)
	}{
		{"unreachable database", "database", doctor.Fail, "cannot reach PostgreSQL", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.DatabaseURL = "postgres://postgres@127.0.0.1:1/nowhere?connect_timeout=2"
		}},
		{"never migrated", "migrations", doctor.Fail, "would create payrecon's tables", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.DatabaseURL = pgtest.NewEmptyURL(t)
		}},
		{"a migration pending", "migrations", doctor.Fail, "migrate` would apply 00022", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "DELETE FROM payrecon_schema_migrations WHERE version_id = 22")
		}},
		{"migrated by a newer payrecon", "migrations", doctor.Warn, "this binary does not know (00999)", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "INSERT INTO payrecon_schema_migrations (version_id, is_applied) VALUES (999, true)")
		}},
		{"a column missing", "payments", doctor.Fail, "no column version", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments RENAME COLUMN version TO v")
		}},
		{"a role that cannot lock rows", "payments", doctor.Fail, "rows cannot be locked", func(t *testing.T, cfg *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			role := fmt.Sprintf("doctor_ro_%d", time.Now().UnixNano())
			pgtest.Exec(t, pool, fmt.Sprintf(`CREATE ROLE %s LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s`, role, role))
			t.Cleanup(func() {
				p, err := pgxpool.New(context.Background(), pgtest.AdminURL())
				if err == nil {
					_, _ = p.Exec(context.Background(), "DROP OWNED BY "+role)
					p.Close()
				}
			})
			cfg.DatabaseURL = strings.Replace(cfg.DatabaseURL, "postgres://postgres@", "postgres://"+role+"@", 1)
		}},
		{"no primary key", "payments_indexes", doctor.Fail, "no unique index on id", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments DROP CONSTRAINT payments_pkey CASCADE")
		}},
		{"an invalid index", "payments_indexes", doctor.Fail, "payments_created_at is INVALID", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'payments_created_at'::regclass")
		}},
		{"an amount column of the wrong type", "optional_columns", doctor.Warn, `column "amount" is text`, func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN amount text")
		}},
		{"an account column of the wrong type", "optional_columns", doctor.Warn, "so every row is checked against the key's own account", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_account_id bigint")
		}},
		{"a session column of the wrong type", "optional_columns", doctor.Warn, `column "stripe_checkout_session_id" is bigint, not text`, func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, _ *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id bigint")
		}},
		{"too many replicas", "connections", doctor.Fail, "more than the server allows", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Replicas = 10_000
		}},
		{"a clock far off the database's", "clock_database", doctor.Fail, "the database's clock is -", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Clock = skewedClock{10 * time.Minute}
		}},
		{"a clock somewhat off Stripe's", "clock_stripe", doctor.Warn, "Stripe's clock is -", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Clock = skewedClock{30 * time.Second}
		}},
		{"a clock far off Stripe's", "clock_stripe", doctor.Fail, "Stripe's clock is ", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Clock = skewedClock{-10 * time.Minute}
		}},
		{"too many reads", "read_allocation", doctor.Fail, "against an allocation of 50,000", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.MinCycle, cfg.SweepMode, cfg.EventsInterval = time.Minute, "retrieve", 30*time.Second
		}},
		{"cycles the read share stretches", "read_allocation", doctor.Warn, "--read-share 0.50 stretches 1 cycle", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.MinCycle, cfg.SweepMode, cfg.EventsInterval = time.Minute, "retrieve", 0
		}},
		{"no key", "stripe_key", doctor.Fail, "STRIPE_SECRET_KEY is not set", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.StripeSecretKey = ""
		}},
		{"not a key", "stripe_key", doctor.Fail, "does not look like a Stripe key", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.StripeSecretKey = "pk_test_publishable"
		}},
		{"a key Stripe refuses", "stripe_key", doctor.Fail, "that Stripe refuses", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, sim *stripesim.Server) {
			cfg.StripeSecretKey = "rk_live_revoked"
			cfg.Gateway = gateway(t, "rk_live_revoked", sim)
		}},
		{"a secret key", "stripe_key", doctor.Warn, "it can write to Stripe", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			sim := simtest.Start(t, stripesim.Config{SecretKey: "sk_test_doctor_secret"})
			cfg.StripeSecretKey, cfg.Gateway = "sk_test_doctor_secret", gateway(t, "sk_test_doctor_secret", sim)
		}},
		{"no Charges: Read", "permission Charges: Read", doctor.Fail, "Charges: Read", func(t *testing.T, _ *doctor.Config, _ *pgxpool.Pool, sim *stripesim.Server) {
			sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionChargeRead}})
		}},
		{"no Events: Read", "permission Events: Read", doctor.Fail, "Events: Read", func(t *testing.T, _ *doctor.Config, _ *pgxpool.Pool, sim *stripesim.Server) {
			sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionEventRead}})
		}},
		{"session rows without Checkout Sessions: Read", "permission Checkout Sessions: Read", doctor.Fail, "Checkout Sessions: Read", func(t *testing.T, _ *doctor.Config, pool *pgxpool.Pool, sim *stripesim.Server) {
			pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text")
			sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionCheckoutSessionRead}})
		}},
		{"no PaymentIntents: Read", "permission PaymentIntents: Read", doctor.Fail, "PaymentIntents: Read", func(t *testing.T, _ *doctor.Config, _ *pgxpool.Pool, sim *stripesim.Server) {
			sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionPaymentIntentRead}})
		}},
		{"no Balance: Read", "permission Payouts: Read, Balance: Read", doctor.Warn, "Balance: Read", func(t *testing.T, _ *doctor.Config, _ *pgxpool.Pool, sim *stripesim.Server) {
			sim.SetFaults(stripesim.Faults{MissingPermissions: []string{stripesim.PermissionBalanceRead}})
		}},
		{"a malformed webhook secret", "webhook_secret", doctor.Fail, "secret 2 is not a Stripe signing secret", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.WebhookSecrets = "whsec_0123456789abcdefABCDEF,sk_live_oops"
		}},
		{"a webhook secret of commas", "webhook_secret", doctor.Fail, "nothing but commas", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.WebhookSecrets = " , ,"
		}},
		{"a receiver that refuses", "notify", doctor.Fail, "answered 500", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Notify.URL = receiver(t, notifySecret, http.StatusInternalServerError)
		}},
		{"a receiver with another secret", "notify", doctor.Fail, "answered 401", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Notify.URL = receiver(t, "another secret", http.StatusNoContent)
		}},
		{"a notify URL without a secret", "notify", doctor.Fail, "needs --notify-secret", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.Notify.Secret = ""
		}},
		{"an exposed console", "console_password", doctor.Fail, "run refuses to start", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.AdminAddr = "0.0.0.0:8081"
		}},
		{"a short console password beyond loopback", "console_password", doctor.Fail, "has 8 characters", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.AdminAddr, cfg.ConsolePassword = "0.0.0.0:8081", "hunter22"
		}},
		{"a short console password on loopback", "console_password", doctor.Warn, "8 characters long", func(t *testing.T, cfg *doctor.Config, _ *pgxpool.Pool, _ *stripesim.Server) {
			cfg.ConsolePassword = "hunter22"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, pool, sim := base(t)
			c.break_(t, &cfg, pool, sim)
			rep := doctor.Run(context.Background(), cfg)
			r, ok := results(rep)[c.check]
			switch {
			case !ok:
				t.Fatalf("no %s check: %+v", c.check, rep.Results)
			case r.Status != c.status || !strings.Contains(r.Detail, c.detail):
				t.Fatalf("%s: %s %q; want %s saying %q", c.check, r.Status, r.Detail, c.status, c.detail)
			case r.Fix == "":
				t.Errorf("%s: %s without a fix", c.check, r.Status)
			}
			if c.status == doctor.Fail && rep.Failed == 0 {
				t.Errorf("a failing check not counted: %+v", rep)
			}
		})
	}
}

// The passing cases of the checks whose base result is a default: the
// money columns found, a password on an exposed console, the Events
// permission not needed when the catch-up is off, a notify URL not pinged.
func TestDoctorPassingVariants(t *testing.T) {
	t.Parallel()
	cfg, pool, _ := base(t)
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text, ADD COLUMN stripe_account_id text")
	cfg.AdminAddr, cfg.ConsolePassword = "0.0.0.0:8081", "correct horse battery staple"
	cfg.EventsInterval, cfg.PingNotify, cfg.PayoutsInterval = 0, false, 0
	got := results(doctor.Run(context.Background(), cfg))
	for check, want := range map[string]string{
		"optional_columns":                        "amount amount (the amount check is on); currency currency (the currency check is on); account column stripe_account_id (Connect",
		"console_password":                        "set; --admin-addr 0.0.0.0:8081",
		"permission Events: Read":                 "not needed",
		"permission Payouts: Read, Balance: Read": "not needed",
		"notify": "not pinged",
	} {
		if r := got[check]; r.Status != doctor.OK || !strings.Contains(r.Detail, want) {
			t.Errorf("%s: %s %q; want ok saying %q", check, r.Status, r.Detail, want)
		}
	}
}
