package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
)

// demoJSON is the part of `payrecon demo --json` the tests read.
type demoJSON struct {
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
	Database string   `json:"database"`
	Kinds    []struct {
		Kind          string `json:"kind"`
		Repairable    bool   `json:"repairable"`
		Injected      int    `json:"injected"`
		Detected      int    `json:"detected"`
		Repaired      int    `json:"repaired"`
		LeftForReview int    `json:"left_for_review"`
		Missed        int    `json:"missed"`
	} `json:"kinds"`
	FalseFindings int `json:"false_findings"`
	InSyncRows    int `json:"in_sync_rows"`
	InSyncTouched int `json:"in_sync_touched"`
	ReviewTouched int `json:"review_touched"`
	Sweep         struct {
		Rows           int `json:"rows"`
		StripeRequests int `json:"stripe_requests"`
	} `json:"sweep"`
}

func demoDatabaseExists(t *testing.T, name string) bool {
	t.Helper()
	pool := pgtestPool(t, pgtest.AdminURL())
	return pgtest.Count(t, pool, "SELECT count(*) FROM pg_database WHERE datname = $1", name) == 1
}

// payrecon demo in-process: every kind injected and detected, the two
// repairable kinds repaired, nothing else touched, and the demo's database
// dropped afterwards.
func TestDemoInProcess(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{"DATABASE_URL": pgtest.AdminURL()}, "demo", "--payments", "400", "--json")
	if r.code != 0 {
		t.Fatalf("demo exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	var rep demoJSON
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, r.stdout)
	}
	if !rep.OK || len(rep.Problems) != 0 {
		t.Errorf("ok %v, problems %v", rep.OK, rep.Problems)
	}
	if len(rep.Kinds) != len(payrecon.Kinds) {
		t.Fatalf("%d kinds in the report, want %d", len(rep.Kinds), len(payrecon.Kinds))
	}
	for i, k := range rep.Kinds {
		if k.Kind != string(payrecon.Kinds[i]) {
			t.Errorf("kind %d is %s, want %s", i, k.Kind, payrecon.Kinds[i])
		}
		if k.Kind != string(payrecon.KindInvalidLocalRow) && !payrecon.Kind(k.Kind).IsConnectOnly() && (k.Injected < 1 || k.Detected != k.Injected || k.Missed != 0) { // a fault, not injected; a platform's kind
			t.Errorf("%s: injected %d, detected %d, missed %d", k.Kind, k.Injected, k.Detected, k.Missed)
		}
		repairable := k.Kind == string(payrecon.KindMissedSuccess) || k.Kind == string(payrecon.KindMissedCancel)
		if k.Repairable != repairable || (repairable && k.Repaired != k.Injected) {
			t.Errorf("%s: repairable %v, repaired %d of %d", k.Kind, k.Repairable, k.Repaired, k.Injected)
		}
	}
	if rep.FalseFindings != 0 || rep.InSyncTouched != 0 || rep.ReviewTouched != 0 || rep.InSyncRows < 300 {
		t.Errorf("false findings %d, in-sync touched %d of %d, review touched %d", rep.FalseFindings, rep.InSyncTouched, rep.InSyncRows, rep.ReviewTouched)
	}
	if rep.Sweep.Rows != 400 || rep.Sweep.StripeRequests == 0 {
		t.Errorf("sweep %+v", rep.Sweep)
	}
	if rep.Database == "" || demoDatabaseExists(t, rep.Database) {
		t.Errorf("the demo database %q was not dropped", rep.Database)
	}
	if strings.Contains(r.stdout, `"platform"`) {
		t.Error("a demo without --accounts reports a platform")
	}
}

// The check can fail: rows touched behind the canonical writer's back make
// the demo say FAIL and exit 1.
func TestDemoFailsWhenInSyncRowsAreTouched(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{"DATABASE_URL": pgtest.AdminURL()}, "demo", "--payments", "200", "--tamper", "2")
	if r.code != 1 {
		t.Fatalf("demo with tampered rows exit %d, want 1: %s\n%s", r.code, r.stderr, r.stdout)
	}
	if !strings.Contains(r.stdout, "FAIL: 2 in-sync rows touched") || strings.Contains(r.stdout, "PASS") {
		t.Errorf("stdout lacks the FAIL line:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "payrecon: demo FAILED: 2 in-sync rows touched") {
		t.Errorf("stderr lacks the one-line error:\n%s", r.stderr)
	}
}

func TestDemoConfigurationErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		args []string
		code int
		want string
	}{
		{"too few payments", map[string]string{}, []string{"demo", "--payments", "10"}, 2, "--payments must be at least 100"},
		{"unreachable DATABASE_URL", map[string]string{"DATABASE_URL": "postgres://postgres:secretpw@127.0.0.1:1/postgres?connect_timeout=2"},
			[]string{"demo", "--payments", "100"}, 2, "DATABASE_URL is set but no PostgreSQL answers there"},
		{"too many accounts", map[string]string{}, []string{"demo", "--payments", "400", "--accounts", "8"}, 2, "--accounts must be between 0 and 7 for 400 payments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, c.env, c.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if last := lines[len(lines)-1]; r.code != c.code || !strings.Contains(last, c.want) || strings.Contains(r.stderr, "secretpw") {
				t.Errorf("exit %d (want %d), last stderr line %q (want %q)", r.code, c.code, last, c.want)
			}
		})
	}
}

// runDemoBinary runs the built binary's demo with env added to the
// environment (DATABASE_URL removed unless given).
func runDemoBinary(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin := binary(t) // built first: the build is not the process's time
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"demo"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run payrecon demo: %v", err)
	}
	return code, out.String(), errb.String()
}

// The built binary prints the table and PASS, and exits 0.
func TestDemoBinary(t *testing.T) {
	t.Parallel()
	code, out, errs := runDemoBinary(t, map[string]string{"DATABASE_URL": pgtest.AdminURL()}, "--payments", "400", "--seed", "2")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	want := []string{"injected  detected  repaired  left for review  missed", "false findings        0",
		"in-sync rows touched  0", "grace window off", "Stripe requests", "dropped\n",
		"PASS: every injected drift was detected"}
	for _, k := range payrecon.Kinds {
		want = append(want, string(k))
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(errs, "level=ERROR") {
		t.Errorf("errors logged:\n%s", errs)
	}
}

// With no server to use, the demo starts a throwaway cluster with initdb,
// passes, and leaves nothing behind.
func TestDemoBinaryThrowawayCluster(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "payrecon-demo-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil { // PostgreSQL's own user must enter it
		t.Fatal(err)
	}
	code, out, errs := runDemoBinary(t, map[string]string{"TMPDIR": tmp}, "--payments", "150", "--throwaway")
	if strings.Contains(errs, "PostgreSQL is not installed") {
		t.Skip("initdb is not installed")
	}
	if code != 0 || !strings.Contains(out, "PASS") || !strings.Contains(errs, "throwaway PostgreSQL stopped and removed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("left behind in TMPDIR: %v", entries)
	}
}

// The built binary plays the demo as a platform on Connect (--accounts):
// the rows spread over the platform's own account and three connected
// accounts, each swept as its own job through River, every account with
// drift and all of it found, the scorecard per account adding up to the
// total, and not one request made under the wrong Stripe-Account.
func TestDemoBinaryAccounts(t *testing.T) {
	t.Parallel()
	code, out, errs := runDemoBinary(t, map[string]string{"DATABASE_URL": pgtest.AdminURL()}, "--payments", "400", "--seed", "3", "--accounts", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	var rep struct {
		demoJSON
		Platform *struct {
			AccountColumn string `json:"account_column"`
			Accounts      []struct {
				Account       string `json:"account"`
				Job           string `json:"job"`
				Rows          int    `json:"rows"`
				Swept         int    `json:"swept"`
				Completed     bool   `json:"completed"`
				Injected      int    `json:"injected"`
				Detected      int    `json:"detected"`
				Repaired      int    `json:"repaired"`
				LeftForReview int    `json:"left_for_review"`
				Missed        int    `json:"missed"`
			} `json:"accounts"`
			WrongAccountRequests int64 `json:"wrong_account_requests"`
		} `json:"platform"`
		Events struct {
			Lost     int `json:"lost"`
			CaughtUp int `json:"caught_up"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("demo --json: %v\n%s", err, out)
	}
	if !rep.OK || len(rep.Problems) != 0 || rep.FalseFindings != 0 || rep.InSyncTouched != 0 || rep.ReviewTouched != 0 {
		t.Errorf("ok %v, problems %v, false findings %d, touched %d/%d", rep.OK, rep.Problems, rep.FalseFindings, rep.InSyncTouched, rep.ReviewTouched)
	}
	pl := rep.Platform
	if pl == nil || pl.AccountColumn != "stripe_account_id" || len(pl.Accounts) != 4 || pl.Accounts[0].Account != "" {
		t.Fatalf("platform report %+v", pl)
	}
	if pl.WrongAccountRequests != 0 {
		t.Errorf("%d requests under the wrong Stripe-Account", pl.WrongAccountRequests)
	}
	var rows, injected, detected, repaired int
	for _, a := range pl.Accounts {
		if want := payrecon.AccountJob("payments-vs-stripe", a.Account); a.Job != want {
			t.Errorf("account %q's job is %q, want %q", a.Account, a.Job, want)
		}
		if a.Account != "" && !payrecon.ValidAccountID(a.Account) {
			t.Errorf("account id %q", a.Account)
		}
		if !a.Completed || a.Swept != a.Rows || a.Rows < 90 || a.Injected == 0 || a.Detected != a.Injected || a.Missed != 0 || a.Repaired == 0 {
			t.Errorf("account %q: %+v", a.Account, a)
		}
		rows, injected, detected, repaired = rows+a.Rows, injected+a.Injected, detected+a.Detected, repaired+a.Repaired
	}
	var kindsInjected, kindsDetected, kindsRepaired int
	for _, k := range rep.Kinds {
		kindsInjected, kindsDetected, kindsRepaired = kindsInjected+k.Injected, kindsDetected+k.Detected, kindsRepaired+k.Repaired
		if k.Missed != 0 {
			t.Errorf("%s: %d missed", k.Kind, k.Missed)
		}
	}
	if rows != 400 || rep.Sweep.Rows != 400 || injected != kindsInjected || detected != kindsDetected || repaired != kindsRepaired {
		t.Errorf("accounts add up to %d rows (sweep %d), %d/%d/%d injected/detected/repaired; the kinds to %d/%d/%d",
			rows, rep.Sweep.Rows, injected, detected, repaired, kindsInjected, kindsDetected, kindsRepaired)
	}
	// One webhook per account came from another account: never applied
	// (the review rows untouched), each an account_mismatch.
	for _, k := range rep.Kinds {
		if k.Kind == string(payrecon.KindAccountMismatch) && (k.Injected != 4 || k.Detected != 4 || k.LeftForReview+k.Repaired > 4) {
			t.Errorf("account_mismatch: %+v", k)
		}
	}
	if rep.Events.Lost == 0 || rep.Events.CaughtUp != rep.Events.Lost {
		t.Errorf("live events: %d of %d lost caught up", rep.Events.CaughtUp, rep.Events.Lost)
	}
	if strings.Contains(errs, "level=ERROR") {
		t.Errorf("errors logged:\n%s", errs)
	}
}
