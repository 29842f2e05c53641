package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func httpGet(url string) (int, string) { return httpGetAs(url, "") }

// httpGetAs is httpGet with the console password as HTTP basic auth (how
// Prometheus scrapes the admin listener's /metrics); "" sends none.
func httpGetAs(url, password string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if password != "" {
		req.SetBasicAuth("prometheus", password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
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

// payrecon run in-process: health, readiness, metrics (including every one
// docs/alerts.yml uses), the webhook, the sweep and the repair workers, the
// two listeners (metrics, the console and River's dashboard only on the
// admin one, behind the console's login), then a clean stop on cancel.
func TestRunInProcess(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"pending", "succeeded"}, {"paid", "succeeded"}, {"pending", "requires_payment_method"},
		{"pending", "requires_payment_method"}})
	// Another producer writes a command to the outbox, with no delivery job
	// (and the sweep sees nothing to repair on that row): the service adopts
	// the command and applies it.
	pgtest.Exec(t, pgtestPool(t, b.url), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('Payment', $1::text, 'ApplyPaymentCanceled', jsonb_build_object('payment_id', $2::bigint))`, fmt.Sprint(ids[3]), ids[3])
	addr, adminAddr := freeAddr(t), freeAddr(t)
	env := map[string]string{}
	for k, v := range b.env {
		env[k] = v
	}
	env["STRIPE_WEBHOOK_SECRET"] = "whsec_test_run"
	env["PAYRECON_CONSOLE_PASSWORD"] = "console-pw-run-test"
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", "--http-addr", addr, "--admin-addr", adminAddr, "--grace", "0", "--min-cycle", "1h", "--log-format", "json", "--workers", "4"},
			func(k string) string { return env[k] }, &out, &errb)
	}()
	base, admin := "http://"+addr, "http://"+adminAddr
	testkit.WaitFor(t, "/readyz", 30*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned before it was ready: %v\n%s", err, errb.String())
		default:
		}
		code, _ := httpGet(base + "/readyz")
		return code == 200
	})
	if code, body := httpGet(base + "/healthz"); code != 200 {
		t.Errorf("/healthz = %d %s", code, body)
	}
	pool := pgtestPool(t, b.url)
	// The sweep finds the missed success and the relay repairs it.
	testkit.WaitFor(t, "the missed success to be repaired", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid' AND version = 1", ids[0]) == 1
	})
	testkit.WaitFor(t, "the other producer's command to be applied", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'failed' AND version = 1", ids[3]) == 1
	})
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND resolution = 'repaired'", ids[0]); n != 1 {
		t.Error("the repaired finding is not resolved as repaired")
	}
	// A signed webhook moves the third payment.
	b.sim.Put(stripesim.Intent{ID: "pi_cli_0002", Status: payrecon.IntentSucceeded, Created: time.Now().Add(-time.Hour)})
	payload := []byte(fmt.Sprintf(`{"id":"evt_run_1","object":"event","type":"payment_intent.succeeded","created":%d,"api_version":"2020-08-27","data":{"object":{"id":"pi_cli_0002","object":"payment_intent","status":"succeeded"}}}`, time.Now().Unix()))
	req, _ := http.NewRequest("POST", base+"/webhooks/stripe", bytes.NewReader(payload))
	req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, "whsec_test_run", time.Now()))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("webhook = %d", resp.StatusCode)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid'", ids[2]); n != 1 {
		t.Error("the webhook did not mark the payment paid")
	}
	if code, _ := httpGet(admin + "/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the console password = %d, want 401", code)
	}
	code, metrics := httpGetAs(admin+"/metrics", env["PAYRECON_CONSOLE_PASSWORD"])
	for _, name := range []string{"payrecon_reconciliation_lag_seconds", "payrecon_sweep_rows_total", "payrecon_findings_open",
		"payrecon_outbox_backlog", "payrecon_stripe_requests_total", "payrecon_stripe_limiter_rate_per_second",
		"payrecon_repairs_total", "payrecon_sweep_projected_cycle_seconds", "payrecon_sweep_capacity_margin_rows_per_hour", "go_goroutines"} {
		if code != 200 || !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s (status %d)", name, code)
		}
	}
	// Every metric the example alert rules and the Grafana dashboard
	// (deploy/grafana) use is exported.
	for _, file := range []string{"../../docs/alerts.yml", "../../deploy/grafana/payrecon.json"} {
		rules, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`payrecon_[a-z_]+`).FindAllString(string(rules), -1) {
			if !strings.Contains(metrics, "\n"+name) {
				t.Errorf("%s uses %s, which /metrics does not export", file, name)
			}
		}
	}
	for _, path := range []string{"/metrics", "/riverui/", "/riverui/api/jobs?state=discarded", "/console/"} {
		if code, _ := httpGet(base + path); code != http.StatusNotFound {
			t.Errorf("public %s = %d, want 404: it belongs to the admin listener", path, code)
		}
	}
	if code, body := httpGet(admin + "/healthz"); code != 200 || body != "ok" {
		t.Errorf("admin /healthz = %d %q", code, body)
	}
	if code, _ := httpGet(admin + "/readyz"); code != 200 {
		t.Errorf("admin /readyz = %d", code)
	}
	// River's dashboard and the console need a login: the attack
	// (pausing the repair queue) is refused, and a login opens both.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ = http.NewRequest(http.MethodPut, admin+"/riverui/api/queues/repairs/pause", nil)
	if resp, err := noRedirect.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated PUT /riverui/api/queues/repairs/pause = %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, path := range []string{"/riverui/", "/console/"} {
		resp, err := noRedirect.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
			t.Errorf("unauthenticated GET %s = %d %s, want a redirect to the login", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	resp, err = noRedirect.PostForm(admin+"/console/login", url.Values{"password": {"console-pw-run-test"}, "name": {"ops"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) == 0 {
		t.Fatalf("login = %d with %d cookies", resp.StatusCode, len(cookies))
	}
	for _, path := range []string{"/riverui/", "/console/"} {
		req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
		req.AddCookie(cookies[0])
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s after login = %d", path, resp.StatusCode)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancel; want nil (a clean stop)\n%s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop")
	}
	if !strings.Contains(errb.String(), `"msg":"configuration"`) || strings.Contains(errb.String(), b.sim.SecretKey()) ||
		strings.Contains(errb.String(), "whsec_test_run") || strings.Contains(errb.String(), "console-pw-run-test") ||
		!strings.Contains(errb.String(), `"console_password":"(set)"`) {
		t.Errorf("the effective configuration is not logged, or a secret is:\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), `"msg":"stopped"`) {
		t.Errorf("no structured stop log:\n%s", errb.String())
	}
}

// proc is a payrecon process started from the built binary.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan error
}

func startBinary(t testing.TB, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	cmd.Stdout = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) wait(t *testing.T, timeout time.Duration) (int, bool) {
	t.Helper()
	select {
	case <-p.done:
		p.done <- nil // for the cleanup
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

func leaseHolderPID(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	// The holder of the lease in this test's own database: other payrecon
	// processes on the same server hold leases of their own.
	h, err := postgres.LeaseHolderOf(context.Background(), pool, "payments-vs-stripe")
	if err != nil || h == nil || !strings.HasPrefix(h.ApplicationName, "payrecon run") {
		return 0
	}
	app := h.ApplicationName
	var pid int
	if i := strings.LastIndex(app, "pid "); i >= 0 {
		fmt.Sscanf(app[i+4:], "%d", &pid)
	}
	return pid
}

// Two `payrecon run` processes on one database: one sweeps, the other
// waits on the lease; when the first is killed, the second takes over, and
// nothing is recorded twice.
func TestTwoRunProcessesFailover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := make([][2]string, 0, 300)
	for i := 0; i < 300; i++ {
		switch {
		case i%10 == 0:
			rows = append(rows, [2]string{"pending", "succeeded"})
		case i%15 == 1:
			rows = append(rows, [2]string{"paid", "canceled"})
		default:
			rows = append(rows, [2]string{"paid", "succeeded"})
		}
	}
	b.seed(t, rows)
	b.sim.SetFaults(stripesim.Faults{Latency: 5 * time.Millisecond})
	// A repair job the killed process had picked up is handed to the
	// survivor after --repair-rescue-after.
	args := []string{"run", "--grace", "0", "--min-cycle", "200ms", "--batch", "20", "--rps", "400", "--log-format", "json", "--workers", "4",
		"--repair-rescue-after", "3s"}
	pool := pgtestPool(t, b.url)
	p1 := startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...)
	testkit.WaitFor(t, "the first process to hold the lease", 30*time.Second, func() bool { return leaseHolderPID(t, pool) == p1.cmd.Process.Pid })
	p2 := startBinary(t, b.env, append(args, "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t))...)
	testkit.WaitFor(t, "the second process to wait for the lease", 30*time.Second, func() bool {
		return strings.Contains(p2.stderr.String(), "waiting for the sweep lease")
	})
	if pid := leaseHolderPID(t, pool); pid != p1.cmd.Process.Pid {
		t.Fatalf("lease holder %d, want the first process %d", pid, p1.cmd.Process.Pid)
	}
	testkit.WaitFor(t, "a batch or two", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL") >= 40
	})
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	testkit.WaitFor(t, "the second process to take over", 30*time.Second, func() bool { return leaseHolderPID(t, pool) == p2.cmd.Process.Pid })
	t.Logf("takeover after %s", time.Since(killed).Round(time.Millisecond))
	testkit.WaitFor(t, "two completed cycles and every repair applied", 60*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL") == 0 &&
			pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE status = 'pending'") == 0 &&
			pgtest.Count(t, pool, "SELECT count(*) FROM outbox WHERE processed_at IS NULL") == 0
	})
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM (SELECT payment_id, kind FROM reconciliation_findings GROUP BY 1, 2 HAVING count(*) > 1) d"); n != 0 {
		t.Errorf("%d findings recorded twice", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM (SELECT aggregate_id FROM outbox GROUP BY 1 HAVING count(*) > 1) d"); n != 0 {
		t.Errorf("%d payments with two repair commands", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE version > 1"); n != 0 {
		t.Errorf("%d payments transitioned twice", n)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success'"); n != 30 {
		t.Errorf("%d missed_success findings, want 30", n)
	}
	if err := p2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, ok := p2.wait(t, 30*time.Second); !ok || code != 0 {
		t.Errorf("SIGTERM: exited=%v code=%d\n%s", ok, code, p2.stderr.String())
	}
}

// SIGTERM in the middle of a batch: the process exits 0 and the batch is
// either committed whole or not at all: exactly the rows up to the cursor
// are verified.
func TestSIGTERMDuringBatchLeavesNothingHalfWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := make([][2]string, 400)
	for i := range rows {
		rows[i] = [2]string{"paid", "succeeded"}
	}
	b.seed(t, rows)
	b.sim.SetFaults(stripesim.Faults{Latency: 30 * time.Millisecond})
	p := startBinary(t, b.env, "run", "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--grace", "0", "--batch", "100", "--concurrency", "4", "--rps", "0", "--mode", "retrieve", "--workers", "4")
	pool := pgtestPool(t, b.url)
	testkit.WaitFor(t, "the first batch", 30*time.Second, func() bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL") > 0
	})
	// The next batch is now in progress (100 rows × 30 ms / 4 ≈ 750 ms).
	time.Sleep(200 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, ok := p.wait(t, 30*time.Second)
	if !ok || code != 0 {
		t.Fatalf("exited=%v code=%d\n%s", ok, code, p.stderr.String())
	}
	var cursor, verified, maxVerified int64
	if err := pool.QueryRow(context.Background(), "SELECT last_id FROM reconciliation_cursor").Scan(&cursor); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), "SELECT count(*), coalesce(max(id), 0) FROM payments WHERE last_reconciled_at IS NOT NULL").Scan(&verified, &maxVerified); err != nil {
		t.Fatal(err)
	}
	below := int64(pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id <= $1", cursor))
	if cursor == 0 || verified != below || maxVerified != cursor || verified%100 != 0 {
		t.Errorf("cursor %d, %d rows verified up to id %d (%d rows at or below the cursor): a batch was half-written", cursor, verified, maxVerified, below)
	}
	if !strings.Contains(p.stderr.String(), "stopped") {
		t.Errorf("no clean stop in the log:\n%s", p.stderr.String())
	}
}

var _ = bufio.NewScanner
