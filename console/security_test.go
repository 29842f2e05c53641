package console_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/service"
)

// getHost is get with another Host header, as a browser sends after a DNS
// rebinding: the name is the attacker's, the address ours.
func getHost(t *testing.T, u, host string, cookies ...*http.Cookie) response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Host = host
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return do(t, req)
}

// Without a password the console answers only requests addressed to a
// loopback name: a page of another site that rebinds its name to
// 127.0.0.1 gets neither a page (nor its CSRF token), nor River's API, nor
// the metrics, and cannot act, even with a valid token and a same-origin
// look. With a password any Host is served (the login and the origin
// checks protect it).
func TestOpenConsoleAnswersOnlyLoopbackHosts(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	_, port, _ := strings.Cut(strings.TrimPrefix(b.admin, "http://"), ":")
	id := b.findingOf(t, "pi_gone_0")
	token := csrfOf(t, get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id)).body)
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.nip.io:" + port, "localhost.evil.example:" + port} {
		for _, path := range []string{"/console/", fmt.Sprintf("/console/findings/%d", id), "/console/login", "/riverui/", "/riverui/api/jobs?state=available", "/metrics"} {
			r := getHost(t, b.admin+path, host)
			if r.status != http.StatusForbidden || strings.Contains(r.body, `name="csrf"`) {
				t.Errorf("Host %q, GET %s = %d, want 403", host, path, r.status)
			}
		}
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id),
			strings.NewReader(url.Values{"note": {"rebound"}, "csrf": {token}}.Encode()))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		if r := do(t, req); r.status != http.StatusForbidden {
			t.Errorf("Host %q, POST resolve = %d, want 403", host, r.status)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", id); n != 1 {
		t.Fatal("a request with a foreign Host resolved a finding")
	}
	if !strings.Contains(b.logs.String(), "not a loopback name") {
		t.Error("the refusal is not logged")
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port, "127.0.0.1", "localhost", "[::1]"} {
		if r := getHost(t, b.admin+"/console/", host); r.status != http.StatusOK {
			t.Errorf("Host %q = %d, want 200", host, r.status)
		}
	}
	if r := getHost(t, b.admin+"/metrics", "localhost:"+port); r.status != http.StatusOK {
		t.Errorf("/metrics on localhost = %d", r.status)
	}
	// With a password the login and the origin checks protect the console:
	// an operator may reach it under any name.
	srv := b.replica(t, password, nil)
	if r := getHost(t, srv.URL+"/console/login", "payrecon.internal:8081"); r.status != http.StatusOK {
		t.Errorf("a console with a password, Host payrecon.internal = %d, want 200", r.status)
	}
}

// The low-severity hardening of the admin listener, on one service with a
// password: /metrics needs the password (basic auth) or a session unless
// --metrics-public; River's dashboard is never framed nor sniffed; the
// lookup answers 400 for text that is not text; a note's length is counted
// in characters.
func TestAdminHardening(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	c := login(t, b.admin, "ivan")

	t.Run("metrics", func(t *testing.T) {
		r := get(t, b.admin+"/metrics")
		if r.status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic ") || strings.Contains(r.body, "payrecon_") {
			t.Errorf("/metrics without a login = %d %q, want 401 asking for basic auth", r.status, r.header.Get("WWW-Authenticate"))
		}
		basic := func(pw string) response {
			req, _ := http.NewRequest(http.MethodGet, b.admin+"/metrics", nil)
			req.SetBasicAuth("prometheus", pw)
			return do(t, req)
		}
		if r := basic(password); r.status != http.StatusOK || !strings.Contains(r.body, "payrecon_sweep_") {
			t.Errorf("/metrics with the password = %d", r.status)
		}
		if r := basic("not the password"); r.status != http.StatusUnauthorized || strings.Contains(r.body, "payrecon_") {
			t.Errorf("/metrics with a wrong password = %d, want 401", r.status)
		}
		if !strings.Contains(b.logs.String(), `"msg":"console: metrics refused"`) {
			t.Error("the wrong metrics password is not logged")
		}
		if r := get(t, b.admin+"/metrics", c); r.status != http.StatusOK {
			t.Errorf("/metrics with a session = %d", r.status)
		}
		public := b.replica(t, password, func(cfg *service.Config) { cfg.MetricsPublic = true })
		if r := get(t, public.URL+"/metrics"); r.status != http.StatusOK || !strings.Contains(r.body, "payrecon_") {
			t.Errorf("/metrics with --metrics-public = %d, want 200 without a login", r.status)
		}
	})

	t.Run("riverui frames", func(t *testing.T) {
		for _, path := range []string{"/riverui/", "/riverui/api/jobs?state=discarded", "/riverui/nowhere"} {
			r := get(t, b.admin+path, c)
			if r.header.Get("X-Frame-Options") != "DENY" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("GET %s = %d with X-Frame-Options %q, X-Content-Type-Options %q, CSP %q", path, r.status,
					r.header.Get("X-Frame-Options"), r.header.Get("X-Content-Type-Options"), r.header.Get("Content-Security-Policy"))
			}
		}
		// Refused before the login too.
		if r := get(t, b.admin+"/riverui/"); r.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("the redirect to the login has X-Frame-Options %q", r.header.Get("X-Frame-Options"))
		}
	})

	t.Run("lookup of bad text", func(t *testing.T) {
		before := strings.Count(b.logs.String(), `"level":"ERROR"`)
		for _, q := range []string{"%00", "abc%00def", "%ff%fe", "%c3%28"} {
			r := get(t, b.admin+"/console/lookup?q="+q, c)
			if r.status != http.StatusBadRequest {
				t.Errorf("lookup q=%s = %d, want 400", q, r.status)
			}
		}
		if after := strings.Count(b.logs.String(), `"level":"ERROR"`); after != before {
			t.Errorf("bad lookups logged %d errors", after-before)
		}
		if r := get(t, b.admin+"/console/lookup?q="+url.QueryEscape("order-注文"), c); r.status != http.StatusOK {
			t.Errorf("a lookup in Japanese = %d", r.status)
		}
	})

	t.Run("note length in characters", func(t *testing.T) {
		id := b.findingOf(t, "pi_review_3")
		page := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), c)
		resolve := func(note string) response {
			r := post(t, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id), url.Values{"note": {note}, "csrf": {csrfOf(t, page.body)}}, nil, c)
			return get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), append(r.cookie, c)...)
		}
		if r := resolve("bad \xff byte"); !strings.Contains(r.body, "not valid text") {
			t.Error("a note with invalid UTF-8 is not refused as such")
		}
		if r := resolve(strings.Repeat("長", 2001)); !strings.Contains(r.body, "longer than 2000 characters") {
			t.Error("a note of 2,001 characters is not refused")
		}
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", id); n != 1 {
			t.Fatal("a refused note resolved the finding")
		}
		note := strings.Repeat("返金済み", 500) // 2,000 characters, 6,000 bytes
		resolve(note)
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution_note = $2", id, note); n != 1 {
			t.Error("a note of 2,000 characters (6,000 bytes) was refused")
		}
	})
}

// clientFrom is an HTTP client whose connections leave from the loopback
// address ip (any 127.x.y.z reaches a listener on 127.0.0.1), one new
// connection a request, as a flood from many machines would come.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loginFrom tries a login from ip and returns the status.
func loginFrom(t *testing.T, base, ip, pw string) int {
	resp, err := clientFrom(ip).PostForm(base+"/console/login", url.Values{"password": {pw}})
	if err != nil {
		t.Errorf("login from %s: %v", ip, err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// flood tries n logins with wrong passwords from each address, 16 at once,
// and counts the answers by status.
func flood(t *testing.T, base string, addrs []string, n int) map[int]int {
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		work   = make(chan string)
		wg     sync.WaitGroup
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ip := range work {
				code := loginFrom(t, base, ip, "guess-"+ip)
				mu.Lock()
				counts[code]++
				mu.Unlock()
			}
		}()
	}
	for range n {
		for _, ip := range addrs {
			work <- ip
		}
	}
	close(work)
	wg.Wait()
	return counts
}

// A login flood from many addresses gets no more password checks than the
// process-wide budget (the clock stands still, so exactly its burst), locks
// new logins out while it lasts, and lets the operator in once the budget
// refills. A client that was throttled stays throttled however many other
// addresses try meanwhile: the table of clients is never cleared.
func TestLoginFloodFromManyAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	addrs := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s.%d.%d", prefix, i/250, 1+i%250)
		}
		return out
	}

	t.Run("global budget", func(t *testing.T) {
		t.Parallel()
		clock := testkit.NewClock(time.Now())
		srv := b.replica(t, password, func(cfg *service.Config) {
			cfg.Clock = clock
			cfg.Console.LoginBurst, cfg.Console.LoginsPerMinute = 5, 6
			cfg.Console.LoginBurstTotal, cfg.Console.LoginsPerMinuteTotal = 20, 30
		})
		counts := flood(t, srv.URL, addrs("127.10", 200), 3)
		if counts[http.StatusUnauthorized] != 20 || counts[http.StatusTooManyRequests] != 580 {
			t.Errorf("600 wrong logins from 200 addresses answered %v; want 20 checked (the global burst) and 580 refused with 429", counts)
		}
		if code := loginFrom(t, srv.URL, "127.11.0.1", password); code != http.StatusTooManyRequests {
			t.Errorf("the right password during the flood = %d, want 429", code)
		}
		clock.Advance(time.Minute)
		if code := loginFrom(t, srv.URL, "127.11.0.1", password); code != http.StatusSeeOther {
			t.Errorf("the right password a minute later = %d, want 303", code)
		}
	})

	t.Run("throttled clients are remembered", func(t *testing.T) {
		t.Parallel()
		srv := b.replica(t, password, func(cfg *service.Config) {
			cfg.Clock = testkit.NewClock(time.Now())
			cfg.Console.LoginBurst, cfg.Console.LoginsPerMinute = 5, 6
			cfg.Console.LoginBurstTotal, cfg.Console.LoginsPerMinuteTotal = 1_000_000, 1_000_000
		})
		const client = "127.20.0.1"
		for i := range 5 {
			if code := loginFrom(t, srv.URL, client, "guess"); code != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d", i, code)
			}
		}
		if code := loginFrom(t, srv.URL, client, password); code != http.StatusTooManyRequests {
			t.Fatalf("the sixth attempt = %d, want 429", code)
		}
		counts := flood(t, srv.URL, addrs("127.21", 5000), 1)
		if counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != 5000 {
			t.Errorf("the flood was answered %v", counts)
		}
		if code := loginFrom(t, srv.URL, client, password); code != http.StatusTooManyRequests {
			t.Errorf("after 5,000 other addresses the throttled client = %d, want still 429", code)
		}
	})
}

// Logging out ends the session on the server: the cookie, copied before,
// replayed afterwards, opens nothing on this replica or another (pages,
// River's API, actions), and the session's row is gone. Expired sessions
// are deleted as new ones start.
func TestLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	other := b.replica(t, password, nil)
	c := login(t, b.admin, "judy")
	if r := get(t, other.URL+"/console/findings", c); r.status != http.StatusOK {
		t.Fatalf("another replica before the logout = %d", r.status)
	}
	id := b.findingOf(t, "pi_review_1")
	page := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), c)
	token := csrfOf(t, page.body)
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_sessions WHERE operator = 'judy'"); n != 1 {
		t.Fatalf("%d server-side sessions for judy, want 1", n)
	}
	if r := post(t, other.URL+"/console/logout", url.Values{"csrf": {token}}, nil, c); r.status != http.StatusSeeOther {
		t.Fatalf("logout on the other replica = %d", r.status)
	}
	for _, base := range []string{b.admin, other.URL} {
		for _, path := range []string{"/console/", "/console/findings", "/riverui/", "/riverui/api/jobs?state=available"} {
			if r := get(t, base+path, c); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/login") {
				t.Errorf("the replayed cookie, GET %s = %d, want a redirect to the login", path, r.status)
			}
		}
		r := post(t, fmt.Sprintf("%s/console/findings/%d/resolve", base, id), url.Values{"note": {"replayed"}, "csrf": {token}}, nil, c)
		if r.status != http.StatusUnauthorized {
			t.Errorf("the replayed cookie, POST resolve = %d, want 401", r.status)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		req.AddCookie(c)
		if r := do(t, req); r.status != http.StatusUnauthorized {
			t.Errorf("the replayed cookie, GET /metrics = %d, want 401", r.status)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", id); n != 1 {
		t.Error("the replayed cookie resolved a finding")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_sessions WHERE operator = 'judy'"); n != 0 {
		t.Errorf("%d sessions left after the logout", n)
	}
	// Sessions that expired are deleted when the next one starts.
	login(t, b.admin, "kate")
	later := b.replica(t, password, func(cfg *service.Config) { cfg.Clock = testkit.NewClock(time.Now().Add(13 * time.Hour)) })
	login(t, later.URL, "leo")
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_sessions WHERE operator <> 'leo'"); n != 0 {
		t.Errorf("%d expired sessions kept", n)
	}
}
