package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/stripesim"
)

// BenchmarkPublicListenerFlood runs the built binary's `run` with at most
// 4,096 file descriptors (ulimit -n), floods its public listener with
// PAYRECON_BENCH_FLOOD connections (default 5,000) that send nothing, and
// reports the process's open descriptors at the peak (/proc/PID/fd, sampled
// for 3 s), how long a signed webhook takes before the flood and behind
// it, and whether the admin listener's /readyz (a database ping) still
// answers during the flood. PAYRECON_BENCH_BINARY measures another binary
// instead (main's, built before the connection cap) in the same run.
//
//	go test -run '^$' -bench PublicListenerFlood -benchtime 1x ./cmd/payrecon
func BenchmarkPublicListenerFlood(b *testing.B) {
	if testing.Short() {
		b.Skip("takes a minute")
	}
	bin := os.Getenv("PAYRECON_BENCH_BINARY")
	if bin == "" {
		bin = binary(b)
	}
	flood := 5000
	if v := os.Getenv("PAYRECON_BENCH_FLOOD"); v != "" {
		flood, _ = strconv.Atoi(v)
	}
	const secret = "whsec_flood_bench"
	url := pgtest.NewURL(b)
	sim := simtest.Start(b, stripesim.Config{})
	for b.Loop() {
		addr, admin := freeAddr(b), freeAddr(b)
		cmd := exec.Command("sh", "-c", `ulimit -n 4096 && exec "$0" "$@"`, bin, "run", "--http-addr", addr, "--admin-addr", admin,
			"--min-cycle", "1h", "--events-interval", "0", "--log-format", "json", "--log-level", "error")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "STRIPE_SECRET_KEY="+sim.SecretKey(), "STRIPE_API_BASE="+sim.URL(),
			"STRIPE_WEBHOOK_SECRET="+secret)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
		deadline := time.Now().Add(60 * time.Second)
		for code, _ := httpGet("http://" + addr + "/readyz"); code != 200; code, _ = httpGet("http://" + addr + "/readyz") {
			if time.Now().After(deadline) {
				stop()
				b.Fatalf("not ready:\n%s", logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		fds := func() int {
			ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
			return len(ents)
		}
		webhook := func(n int) (time.Duration, int) {
			payload := fmt.Appendf(nil, `{"id":"evt_flood_%d","object":"event","type":"payment_intent.succeeded","created":%d,"api_version":"2020-08-27","data":{"object":{"id":"pi_nobody_%d","object":"payment_intent","status":"succeeded"}}}`,
				n, time.Now().Unix(), n)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhooks/stripe", bytes.NewReader(payload))
			req.Header.Set("Stripe-Signature", stripesim.SignatureHeader(payload, secret, time.Now()))
			cl := &http.Client{Timeout: 3 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
			start := time.Now()
			resp, err := cl.Do(req)
			if err != nil {
				return time.Since(start), 0
			}
			resp.Body.Close()
			return time.Since(start), resp.StatusCode
		}
		idleFDs := fds()
		before, beforeCode := webhook(1)
		var conns []net.Conn
		for range flood {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		peak := 0
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			peak = max(peak, fds())
		}
		type answer struct {
			d    time.Duration
			code int
		}
		hook := make(chan answer, 1)
		go func() { d, code := webhook(2); hook <- answer{d, code} }()
		readyStart := time.Now()
		readyCode, _ := httpGet("http://" + admin + "/readyz")
		ready := time.Since(readyStart)
		behind := <-hook
		for _, c := range conns {
			c.Close()
		}
		stop()
		b.Logf("%d flood connections opened; descriptors %d idle, %d at the peak; webhook %s (%d) before, %s (%d) behind the flood; admin /readyz %d in %s",
			len(conns), idleFDs, peak, before.Round(time.Millisecond), beforeCode, behind.d.Round(time.Millisecond), behind.code, readyCode, ready.Round(time.Millisecond))
		b.ReportMetric(float64(peak), "fds_peak")
		b.ReportMetric(behind.d.Seconds(), "webhook_behind_flood_s")
		b.ReportMetric(float64(behind.code), "webhook_status")
		b.ReportMetric(float64(readyCode), "admin_readyz_status")
	}
}
