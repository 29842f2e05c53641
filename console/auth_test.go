package console_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/service"
)

// replica builds another service on the bundle's database (not running:
// only its admin handler is served) with the given password and clock.
func (b *testBundle) replica(t *testing.T, pw string, mod func(*service.Config)) *httptest.Server {
	t.Helper()
	cfg := serviceConfig(b.sim, pw, &syncBuffer{})
	if mod != nil {
		mod(&cfg)
	}
	svc, err := service.New(b.pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.AdminHandler())
	t.Cleanup(srv.Close)
	return srv
}

// Login, sessions and their cookies: hardened flags, Secure behind TLS,
// valid on another replica with the same password and on no other, not
// after they expire, not when tampered with; a wrong password is refused
// and logged without the password; logins are rate-limited.
func TestLoginAndSessions(t *testing.T) {
	t.Parallel()
	b := setup(t, password)

	t.Run("cookie flags", func(t *testing.T) {
		r := post(t, b.admin+"/console/login", url.Values{"password": {password}, "name": {"bob"}, "next": {"/console/findings"}}, nil)
		if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/findings" {
			t.Fatalf("login = %d to %q", r.status, r.header.Get("Location"))
		}
		c := r.cookie[0]
		if c.Name != "payrecon_console" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge != 12*3600 {
			t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure over plain HTTP, Path=/, 12 h", c)
		}
		r = post(t, b.admin+"/console/login", url.Values{"password": {password}}, http.Header{"X-Forwarded-Proto": {"https"}})
		if !r.cookie[0].Secure {
			t.Error("behind a proxy that says https the cookie is not Secure")
		}
		tls := httptest.NewTLSServer(b.svc.AdminHandler())
		defer tls.Close()
		cl := tls.Client()
		cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := cl.PostForm(tls.URL+"/console/login", url.Values{"password": {password}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if cs := resp.Cookies(); len(cs) == 0 || !cs[0].Secure {
			t.Error("over TLS the cookie is not Secure")
		}
		// An open redirect is not: next stays on the admin listener.
		r = post(t, b.admin+"/console/login", url.Values{"password": {password}, "next": {"//evil.example/x"}}, nil)
		if r.header.Get("Location") != "/console/" {
			t.Errorf("next=//evil.example/x redirected to %q", r.header.Get("Location"))
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		r := post(t, b.admin+"/console/login", url.Values{"password": {"hunter2-wrong"}, "name": {"mallory"}}, nil)
		if r.status != http.StatusUnauthorized || len(r.cookie) != 0 || !strings.Contains(r.body, "Wrong password") {
			t.Errorf("wrong password = %d with %d cookies", r.status, len(r.cookie))
		}
		logs := b.logs.String()
		if !strings.Contains(logs, `"msg":"console: login refused"`) || !strings.Contains(logs, `"reason":"wrong_password"`) ||
			!strings.Contains(logs, `"operator":"mallory"`) {
			t.Errorf("the refused login is not logged:\n%s", logs)
		}
		if !strings.Contains(logs, `"msg":"console: login","component":"console","operator":"bob"`) {
			t.Errorf("the login is not logged:\n%s", logs)
		}
		if strings.Contains(logs, "hunter2-wrong") || strings.Contains(logs, password) {
			t.Error("a password is in the log")
		}
	})

	t.Run("sessions across replicas", func(t *testing.T) {
		c := login(t, b.admin, "carol")
		same := b.replica(t, password, nil)
		other := b.replica(t, "another password", nil)
		later := b.replica(t, password, func(cfg *service.Config) {
			cfg.Clock = testkit.NewClock(time.Now().Add(13 * time.Hour))
		})
		if r := get(t, same.URL+"/console/findings", c); r.status != http.StatusOK || !strings.Contains(r.body, "carol") {
			t.Errorf("a replica with the same password = %d", r.status)
		}
		if r := get(t, other.URL+"/console/findings", c); r.status != http.StatusSeeOther {
			t.Errorf("a replica with another password = %d, want a redirect to the login", r.status)
		}
		if r := get(t, later.URL+"/console/findings", c); r.status != http.StatusSeeOther {
			t.Errorf("an expired session = %d, want a redirect to the login", r.status)
		}
		// Another name in a signed cookie: the MAC no longer matches.
		parts := strings.Split(c.Value, ".")
		parts[3] = "YWRtaW4" // "admin"
		forged := &http.Cookie{Name: c.Name, Value: strings.Join(parts, ".")}
		if r := get(t, b.admin+"/console/findings", forged); r.status != http.StatusSeeOther {
			t.Errorf("a tampered cookie = %d, want a redirect to the login", r.status)
		}
		// Logging out clears the cookie.
		page := get(t, b.admin+"/console/", c)
		r := post(t, b.admin+"/console/logout", url.Values{"csrf": {csrfOf(t, page.body)}}, nil, c)
		if r.status != http.StatusSeeOther || len(r.cookie) == 0 || r.cookie[0].MaxAge >= 0 {
			t.Errorf("logout = %d, cookies %+v", r.status, r.cookie)
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		srv := b.replica(t, password, func(cfg *service.Config) { cfg.Console.LoginBurst, cfg.Console.LoginsPerMinute = 3, 1 })
		for i := 0; i < 3; i++ {
			if r := post(t, srv.URL+"/console/login", url.Values{"password": {"guess" + strconv.Itoa(i)}}, nil); r.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d = %d", i, r.status)
			}
		}
		r := post(t, srv.URL+"/console/login", url.Values{"password": {password}}, nil)
		if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") == "" || len(r.cookie) != 0 {
			t.Errorf("fourth attempt = %d, Retry-After %q: want 429 even with the right password", r.status, r.header.Get("Retry-After"))
		}
	})

	t.Run("unauthenticated", func(t *testing.T) {
		for _, path := range []string{"/console/", "/console/findings", "/console/findings.csv", "/console/findings/1",
			"/console/lookup?q=1", "/console/audit", "/console/nowhere", "/riverui/", "/riverui/api/jobs?state=discarded"} {
			r := get(t, b.admin+path)
			if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/console/login?next=") {
				t.Errorf("GET %s = %d to %q, want a redirect to the login", path, r.status, r.header.Get("Location"))
			}
		}
		for _, path := range []string{"/console/findings/1/resolve", "/console/findings/1/recheck", "/console/dead-letters/1/retry",
			"/riverui/api/jobs/delete", "/riverui/api/queues/repairs/pause"} {
			r := post(t, b.admin+path, url.Values{"note": {"x"}}, nil)
			if r.status != http.StatusUnauthorized {
				t.Errorf("POST %s = %d, want 401", path, r.status)
			}
		}
		if r := get(t, b.admin+"/console/assets/console.css"); r.status != http.StatusOK || !strings.Contains(r.header.Get("Content-Type"), "text/css") {
			t.Errorf("the stylesheet = %d %s, want it served to the login page", r.status, r.header.Get("Content-Type"))
		}
		if r := get(t, b.admin+"/metrics"); r.status != http.StatusUnauthorized {
			t.Errorf("/metrics = %d, want 401 (TestAdminHardening: basic auth, or --metrics-public)", r.status)
		}
	})
}

// Every action needs the session's CSRF token and a same-origin request;
// a token of another session does not do.
func TestActionsNeedCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	c := login(t, b.admin, "dave")
	id := b.findingOf(t, "pi_refund_0")
	path := fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id)
	page := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), c)
	token := csrfOf(t, page.body)
	otherPage := get(t, b.admin+"/console/", login(t, b.admin, "eve"))
	otherToken := csrfOf(t, otherPage.body)
	if otherToken == token {
		t.Fatal("two sessions share a CSRF token")
	}
	form := func(tok string) url.Values { return url.Values{"note": {"refunded in Stripe"}, "csrf": {tok}} }
	for _, r := range []struct {
		name   string
		form   url.Values
		header http.Header
	}{
		{"no token", url.Values{"note": {"refunded in Stripe"}}, nil},
		{"a bad token", form("bm90LWEtdG9rZW4"), nil},
		{"another session's token", form(otherToken), nil},
		{"cross-site, with the right token", form(token), http.Header{"Sec-Fetch-Site": {"cross-site"}}},
		{"another origin, with the right token", form(token), http.Header{"Origin": {"https://evil.example"}}},
	} {
		if got := post(t, path, r.form, r.header, c); got.status != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", r.name, got.status)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", id); n != 1 {
		t.Fatal("a refused action resolved the finding")
	}
	r := post(t, path, form(token), http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {b.admin}}, c)
	if r.status != http.StatusSeeOther {
		t.Fatalf("the same action with its token = %d %s", r.status, r.body)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND operator = 'dave' AND action = 'resolve'", id); n != 1 {
		t.Error("the resolution is not audited with the operator's name")
	}
	// Resolving it again changes nothing and says why.
	r = post(t, path, form(token), nil, c)
	flash := r.cookie
	page = get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), append(flash, c)...)
	if !strings.Contains(page.body, "already resolved") {
		t.Error("resolving a resolved finding does not say it is already resolved")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1", id); n != 1 {
		t.Errorf("%d audit entries for one resolution", n)
	}
	// An empty note resolves nothing.
	other := b.findingOf(t, "pi_refund_1")
	post(t, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, other), url.Values{"note": {"  "}, "csrf": {token}}, nil, c)
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", other); n != 1 {
		t.Error("a finding was resolved without a note")
	}
}

// Without a password on loopback the console is open, says so, and still
// wants a CSRF token for actions; the name given at the optional login is
// recorded.
func TestOpenConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	r := get(t, b.admin+"/console/")
	if r.status != http.StatusOK || !strings.Contains(r.body, "This console has no password") {
		t.Fatalf("open console = %d", r.status)
	}
	if !strings.Contains(b.logs.String(), "the console has no password") {
		t.Error("the service does not say in its log that the console is open")
	}
	if n := strings.Count(b.logs.String(), "the console has no password"); n != 1 {
		t.Errorf("said %d times, want once", n)
	}
	id := b.findingOf(t, "pi_gone_0")
	if r := post(t, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id), url.Values{"note": {"x"}}, nil); r.status != http.StatusForbidden {
		t.Errorf("an action without a token = %d, want 403", r.status)
	}
	r = post(t, b.admin+"/console/login", url.Values{"name": {"frank"}}, nil)
	if r.status != http.StatusSeeOther {
		t.Fatalf("login with a name only = %d", r.status)
	}
	c := r.cookie[0]
	page := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id), c)
	post(t, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id), url.Values{"note": {"test row"}, "csrf": {csrfOf(t, page.body)}}, nil, c)
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND operator = 'frank'", id); n != 1 {
		t.Error("the open console did not record the operator's name")
	}
	// Anonymous actions are recorded under the default name.
	id2 := b.findingOf(t, "pi_gone_1")
	page = get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, id2))
	post(t, fmt.Sprintf("%s/console/findings/%d/resolve", b.admin, id2), url.Values{"note": {"test row"}, "csrf": {csrfOf(t, page.body)}}, nil)
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND operator = 'operator'", id2); n != 1 {
		t.Error("an anonymous action is not recorded under the default name")
	}
}

// The CSV export: every finding of the filter across keyset batches (more
// than one query's worth), the same as the list's pages, formulas defused.
func TestCSVExport(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	// 1,205 orphans (more than one export batch), some with hostile text.
	pgtest.Exec(t, b.pool, `INSERT INTO reconciliation_findings (stripe_payment_intent_id, kind, verdict, local_status, reason, detected_at, resolution_note)
		SELECT 'pi_bulk_' || i, 'missing_locally', 'needs_review', '(none)', CASE WHEN i % 100 = 0 THEN '=HYPERLINK("http://evil")' ELSE 'listed' END,
		       now() - make_interval(secs => i), CASE WHEN i % 200 = 0 THEN '+1-555' ELSE NULL END
		  FROM generate_series(1, 1205) i`)
	c := login(t, b.admin, "grace")
	r := get(t, b.admin+"/console/findings.csv?kind=missing_locally&state=open", c)
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(r.header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("CSV = %d %s %s", r.status, r.header.Get("Content-Type"), r.header.Get("Content-Disposition"))
	}
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1206 || recs[0][0] != "id" {
		t.Fatalf("CSV has %d records, want a header and 1205", len(recs))
	}
	var csvIDs []string
	formulas := 0
	for _, rec := range recs[1:] {
		csvIDs = append(csvIDs, rec[0])
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+-@", rune(cell[0])) {
				t.Errorf("a cell starts with a formula character: %q", cell)
			}
			if strings.HasPrefix(cell, "'=HYPERLINK") || cell == "'+1-555" {
				formulas++
			}
		}
	}
	if formulas != 12+6 {
		t.Errorf("%d defused cells, want 18", formulas)
	}
	rows, err := b.pool.Query(context.Background(), "SELECT id::text FROM reconciliation_findings WHERE kind = 'missing_locally' AND resolved_at IS NULL ORDER BY detected_at DESC, id DESC")
	if err != nil {
		t.Fatal(err)
	}
	dbIDs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(csvIDs, dbIDs) {
		t.Errorf("the CSV's findings differ from the database's (%d vs %d)", len(csvIDs), len(dbIDs))
	}
	// The list pages through the same findings, 50 at a time, by keyset.
	var listIDs []string
	next := "/console/findings?kind=missing_locally&state=open"
	for pages := 0; next != ""; pages++ {
		if pages > 30 {
			t.Fatal("the pages do not end")
		}
		page := get(t, b.admin+next, c)
		for _, part := range strings.Split(page.body, `<th scope="row"><a href="/console/findings/`)[1:] {
			listIDs = append(listIDs, part[:strings.IndexByte(part, '"')])
		}
		next = ""
		if i := strings.Index(page.body, `rel="next"`); i >= 0 {
			href := page.body[strings.LastIndex(page.body[:i], `href="`)+6:]
			next = strings.ReplaceAll(href[:strings.IndexByte(href, '"')], "&amp;", "&")
		}
	}
	if !slices.Equal(listIDs, dbIDs) {
		t.Errorf("the list's pages hold %d findings, the database %d, or in another order", len(listIDs), len(dbIDs))
	}
	// Filters the export shares with the list.
	r = get(t, b.admin+"/console/findings.csv?verdict=needs_review&state=all&age=1h&kind=failed_locally_paid_externally", c)
	recs, _ = csv.NewReader(strings.NewReader(r.body)).ReadAll()
	if len(recs) != 3 {
		t.Errorf("filtered CSV has %d records, want a header and 2", len(recs))
	}
	if r := get(t, b.admin+"/console/findings.csv?age=forever", c); r.status != http.StatusBadRequest {
		t.Errorf("a bad filter = %d, want 400", r.status)
	}
}

// A dead-lettered repair is listed on the overview and retried from the
// console, the retry recorded with the operator's name.
func TestRetryDeadLetter(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	ctx := context.Background()
	finding := b.findingOf(t, "pi_refund_0")
	rl, err := relay.New(b.pool, postgres.NewWriter(nil), relay.Config{InsertOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	var outbox int64
	if err := tx.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('Payment', $1::bigint::text, 'RefundEverything', jsonb_build_object('payment_id', $1::bigint, 'finding_id', $2::bigint)) RETURNING id`,
		b.payments["pi_refund_0"], finding).Scan(&outbox); err != nil {
		t.Fatal(err)
	}
	if err := rl.Enqueue(ctx, tx, []int64{outbox}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the invalid command to be dead-lettered", 30*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'cancelled'", relay.Kind) == 1
	})
	var job int64
	if err := b.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE kind = $1 AND state = 'cancelled'", relay.Kind).Scan(&job); err != nil {
		t.Fatal(err)
	}
	c := login(t, b.admin, "heidi")
	ov := get(t, b.admin+"/console/", c)
	if !strings.Contains(ov.body, fmt.Sprintf("Retry job %d", job)) || !strings.Contains(ov.body, "RefundEverything") {
		t.Fatalf("the overview does not list the dead letter %d", job)
	}
	page := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, finding), c)
	if !strings.Contains(page.body, "Retry dead letter") || !strings.Contains(page.body, "Repair dead-lettered (cancelled)") {
		t.Errorf("the finding's page does not offer the retry or show the dead letter in its timeline")
	}
	r := post(t, fmt.Sprintf("%s/console/dead-letters/%d/retry", b.admin, job), url.Values{"csrf": {csrfOf(t, ov.body)}, "return": {"/console/"}}, nil, c)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/" {
		t.Fatalf("retry = %d to %q", r.status, r.header.Get("Location"))
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE action = 'retry_dead_letter' AND job_id = $1 AND finding_id = $2 AND operator = 'heidi' AND outcome LIKE 'Repair job % retried%'", job, finding); n != 1 {
		t.Error("the retry is not audited")
	}
	testkit.WaitFor(t, "the retried job's second attempt", 30*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE id = $1 AND attempt = 2 AND state = 'cancelled'", job) == 1
	})
}
