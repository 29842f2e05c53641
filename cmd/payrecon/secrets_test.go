package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// A secret set in every place payrecon takes one never reaches its output:
// not `config` (text and JSON), not the start log, not a failed delivery's
// warning (a connection cut, a redirect), not River's job errors stored in
// the database, not status or payments show. The real binary, run as an
// operator would.
func TestSecretsAreNeverPrinted(t *testing.T) {
	t.Parallel()
	const stripeKey = "sk_test_stripekeyS3CRET9-abcdefgh-1234"
	sim := simtest.Start(t, stripesim.Config{SecretKey: stripeKey})
	dbURL := pgtest.NewURL(t)

	// The markers that must never be printed, whole or in part.
	secrets := []string{"stripekeyS3CRET9", "dbquery-S3CRET3", "dbssl-S3CRET2", "webhook-S3CRET4", "notifypass-S3CRET5",
		"notifytoken-S3CRET6", "Summer2024", "console-S3CRET8"}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	// The userinfo password: the server trusts loopback (pgtest), so any
	// will do; a DATABASE_URL that already carries one keeps it, and it
	// must not be printed either.
	pw, has := u.User.Password()
	if !has {
		pw = "dbpass-S3CRET1"
		secrets = append(secrets, pw)
	} else if len(pw) >= 6 {
		secrets = append(secrets, pw)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	q := u.Query()
	q.Set("sslpassword", "dbssl-S3CRET2")
	if !has {
		q.Set("password", "dbquery-S3CRET3")
	}
	u.RawQuery = q.Encode()

	// The application's endpoint: it cuts the first delivery's connection,
	// answers the second with a redirect to itself (the token in the
	// Location), and refuses the rest.
	var calls atomic.Int64
	var notifyURL string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch calls.Add(1) {
		case 1:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		case 2:
			w.Header().Set("Location", notifyURL)
			w.WriteHeader(http.StatusFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(recv.Close)
	notifyURL = strings.Replace(recv.URL, "http://", "http://notifier:notifypass-S3CRET5@", 1) + "/hook?token=notifytoken-S3CRET6&v=1"

	env := map[string]string{
		"DATABASE_URL":              u.String(),
		"STRIPE_SECRET_KEY":         stripeKey,
		"STRIPE_API_BASE":           sim.URL(),
		"STRIPE_WEBHOOK_SECRET":     "whsec_webhook-S3CRET4-abcdefgh",
		"PAYRECON_NOTIFY_URL":       notifyURL,
		"PAYRECON_NOTIFY_SECRET":    "Summer2024_!x",
		"PAYRECON_CONSOLE_PASSWORD": "console-S3CRET8-long-enough",
	}
	pool := pgtestPool(t, dbURL)
	old := time.Now().Add(-time.Hour)
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_secret_0", Status: payrecon.StatusPending, CreatedAt: old}})
	sim.Put(stripesim.Intent{ID: "pi_secret_0", Status: payrecon.IntentSucceeded, Created: old, Amount: 1000, Currency: "usd"})

	var outputs []string
	for _, args := range [][]string{{"config"}, {"config", "--json"}} {
		code, out, errs := runBinary(t, env, time.Minute, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		outputs = append(outputs, strings.Join(args, " ")+":\n"+out+errs)
	}

	p := startBinary(t, env, "run", "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--grace", "0", "--min-cycle", "1h", "--workers", "2")
	testkit.WaitFor(t, "two failed deliveries recorded by River", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_notify' AND coalesce(array_length(errors, 1), 0) >= 2") == 1
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, ok := p.wait(t, 30*time.Second); !ok || code != 0 {
		t.Errorf("run: exited=%v code=%d", ok, code)
	}
	logs := p.stderr.String()
	outputs = append(outputs, "run:\n"+logs)
	var jobErrors string
	if err := pool.QueryRow(context.Background(), "SELECT errors::text FROM river_job WHERE kind = 'payrecon_notify'").Scan(&jobErrors); err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, "river_job.errors:\n"+jobErrors)
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"payments", "show", "pi_secret_0"}, {"relay", "--dead-letters"}} {
		code, out, errs := runBinary(t, env, time.Minute, args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
		outputs = append(outputs, strings.Join(args, " ")+":\n"+out+errs)
	}

	// What must be there, so that the test cannot pass on empty output.
	all := strings.Join(outputs, "\n")
	for _, want := range []string{"configuration", "notify_url", "sk_test_****1234", "whsec_****efgh", "//xxxxx@127.0.0.1",
		"token=xxxxx", "sslpassword=xxxxx", "notification failed", "a redirect to", "EOF"} {
		if !strings.Contains(all, want) {
			t.Errorf("the outputs lack %q", want)
		}
	}
	if ids[0] == 0 || calls.Load() < 2 {
		t.Errorf("the receiver saw %d deliveries, want at least 2", calls.Load())
	}
	for _, out := range outputs {
		name, _, _ := strings.Cut(out, "\n")
		for _, s := range secrets {
			if i := strings.Index(out, s); i >= 0 {
				t.Errorf("%s printed the secret %q: …%s…", name, s, out[max(0, i-80):min(len(out), i+len(s)+40)])
			}
		}
	}
}
