package console_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/browsertest"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
)

// css is a CSS selector.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// text reads an element's text.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(css(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, loc, err)
	}
}

// An operator's session in a real Chromium: log in, filter the findings,
// export the filter as CSV, open a finding, resolve it with a note and see
// it resolved and audited, recheck another; a cross-site form is refused;
// River's dashboard needs the login and is absent from the public listener.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	ctx := browsertest.New(t, 1280, 800, 2*time.Minute)

	// Unauthenticated: every console page and River's dashboard send the
	// browser to the login page.
	for _, path := range []string{"/console/findings", "/riverui/"} {
		run(t, ctx, "open "+path+" without a login", chromedp.Navigate(b.admin+path), chromedp.WaitVisible(css("#password")))
		if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "/console/login?next=") {
			t.Errorf("%s without a login landed on %s, want the login page", path, loc)
		}
	}
	if r := get(t, b.public+"/riverui/"); r.status != http.StatusNotFound {
		t.Errorf("public /riverui/ = %d, want 404", r.status)
	}
	if r := get(t, b.admin+"/riverui/api/jobs"); r.status != http.StatusSeeOther {
		t.Errorf("unauthenticated /riverui/api/jobs = %d, want a redirect to the login", r.status)
	}

	// Log in (from the last redirect: back to River's dashboard).
	run(t, ctx, "log in",
		chromedp.SendKeys(css("#name"), "alice"),
		chromedp.SendKeys(css("#password"), password),
		chromedp.Submit(css("#password")),
		chromedp.WaitReady(css("body")),
	)
	testkit.WaitFor(t, "River's dashboard after the login", 20*time.Second, func() bool {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		return strings.Contains(loc, "/riverui/")
	})
	if title, _ := chromedp.Run(ctx, chromedp.Title()); !strings.Contains(strings.ToLower(title), "river") {
		t.Errorf("after login the dashboard's title is %q", title)
	}

	// Filter the findings: one kind.
	const kind = "paid_locally_not_externally"
	run(t, ctx, "filter findings",
		chromedp.Navigate(b.admin+"/console/findings"),
		chromedp.WaitVisible(css("#f-kind")),
		chromedp.SetValue(css("#f-kind"), kind),
		chromedp.Submit(css("#f-kind")),
		chromedp.WaitVisible(css("table.findings")),
	)
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	if !strings.Contains(loc, "kind="+kind) {
		t.Fatalf("the filter is not in the URL: %s", loc)
	}
	kinds, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.findings tbody tr td:nth-child(2)")].map(e => e.textContent.trim())`))
	if err != nil {
		t.Fatal(err)
	}
	want := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND resolved_at IS NULL", kind)
	if len(kinds) != want || want != 4 {
		t.Errorf("the filtered list has %d rows, the database %d open findings of %s (want 4)", len(kinds), want, kind)
	}
	for _, k := range kinds {
		if k != kind {
			t.Errorf("the filtered list shows a %s finding", k)
		}
	}
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.findings tbody th a")].map(e => e.textContent.trim().slice(1))`))
	if err != nil {
		t.Fatal(err)
	}

	// The CSV export of the same filter, fetched with the browser's session.
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch(document.querySelector("#csv").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("CSV: %v\n%s", err, body)
	}
	var exported []string
	for _, r := range recs[1:] {
		exported = append(exported, r[0])
		if r[2] != kind || r[4] != "open" {
			t.Errorf("CSV row outside the filter: %v", r)
		}
	}
	if !slices.Equal(exported, listed) {
		t.Errorf("CSV ids %v, list ids %v", exported, listed)
	}

	// Open a finding, resolve it with a note.
	id := b.findingOf(t, "pi_review_3")
	run(t, ctx, "open a finding",
		chromedp.Click(css(fmt.Sprintf(`a[href="/console/findings/%d"]`, id))),
		chromedp.WaitVisible(css("#note")),
	)
	if h := text(t, ctx, "h1"); !strings.Contains(h, fmt.Sprintf("#%d", id)) || !strings.Contains(h, kind) {
		t.Errorf("finding page heading %q", h)
	}
	const note = "Order cancelled by hand; customer told. Ticket OPS-42."
	run(t, ctx, "resolve it",
		chromedp.SendKeys(css("#note"), note),
		chromedp.Click(css("#resolve")),
		chromedp.WaitVisible(css("#resolution")),
	)
	if flash := text(t, ctx, ".flash"); !strings.Contains(flash, "resolved by alice") {
		t.Errorf("flash after resolving: %q", flash)
	}
	if r := text(t, ctx, "#resolution"); !strings.Contains(r, "operator by alice") || !strings.Contains(r, note) {
		t.Errorf("the page does not show the resolution: %q", r)
	}
	if n := pgtest.Count(t, b.pool, `SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'operator'
		AND resolved_by = 'alice' AND resolution_note = $2`, id, note); n != 1 {
		t.Error("the finding is not resolved in the database as the page says")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND action = 'resolve' AND operator = 'alice' AND note = $2", id, note); n != 1 {
		t.Error("the resolution is not audited")
	}
	if tl := text(t, ctx, "ol.timeline"); !strings.Contains(tl, "alice: resolve") {
		t.Errorf("the timeline lacks the operator's action:\n%s", tl)
	}
	run(t, ctx, "open the audit log", chromedp.Navigate(b.admin+"/console/audit"), chromedp.WaitVisible(css("table")))
	if a := text(t, ctx, "table"); !strings.Contains(a, "alice") || !strings.Contains(a, note) {
		t.Errorf("the audit log lacks the resolution:\n%s", a)
	}

	// Recheck: Stripe now says the payment succeeded, so the finding heals.
	healed := b.findingOf(t, "pi_review_1")
	if _, err := b.sim.SetStatus("pi_review_1", payrecon.IntentSucceeded); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "recheck",
		chromedp.Navigate(fmt.Sprintf("%s/console/findings/%d", b.admin, healed)),
		chromedp.WaitVisible(css("#recheck")),
		chromedp.Click(css("#recheck")),
		chromedp.WaitVisible(css(".flash")),
	)
	if flash := text(t, ctx, ".flash"); !strings.Contains(flash, "resolved: healed") {
		t.Errorf("flash after the recheck: %q", flash)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'healed'", healed); n != 1 {
		t.Error("the recheck did not heal the finding")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE finding_id = $1 AND action = 'recheck' AND operator = 'alice'", healed); n != 1 {
		t.Error("the recheck is not audited")
	}

	// Another origin's page that posts to the console is refused, even with
	// a valid CSRF token and with the session cookie (the page is on the
	// same host, another port: same-site, so SameSite=Strict still sends
	// the cookie); the finding stays open.
	victim := b.findingOf(t, "pi_review_0")
	token, err := chromedp.Run(ctx, chromedp.Value(css(`input[name="csrf"]`)))
	if err != nil || token == "" {
		t.Fatalf("no CSRF token on the page: %v", err)
	}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/console/findings/%d/resolve">
			<input name="csrf" value="%s"><input name="note" value="pwned"></form>
			<script>document.getElementById("f").submit()</script>`, b.admin, victim, token)
	}))
	defer evil.Close()
	run(t, ctx, "a cross-site form", chromedp.Navigate(evil.URL), chromedp.WaitReady(css("body")))
	testkit.WaitFor(t, "the cross-site post to be answered", 10*time.Second, func() bool {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		return strings.Contains(loc, "/resolve")
	})
	if body := text(t, ctx, "body"); !strings.Contains(body, "cross-origin request refused") {
		t.Errorf("the cross-origin post was answered with %q", body)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolved_at IS NULL", victim); n != 1 {
		t.Error("a cross-site post resolved a finding")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE note = 'pwned'"); n != 0 {
		t.Error("a cross-site post was audited as an action")
	}
}

// The screenshots in docs/console (scripts/screenshots writes them there
// with PAYRECON_SCREENSHOTS_DIR; otherwise into a temporary folder): each
// page at 1280 wide, full length, and the findings list on a phone.
func TestScreenshots(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("PAYRECON_SCREENSHOTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	b := setup(t, password)
	b.webhook(t, "evt_shot_1", "payment_intent.canceled", "pi_review_0", "canceled")
	// A week of history for the charts: the lag grows while a cycle runs
	// and drops when it completes; findings come and go.
	pgtest.Exec(t, b.pool, `INSERT INTO console_samples (minute, lag_seconds, open_findings)
		SELECT m, 1800 + (extract(epoch FROM m)::bigint % 86400) / 4.0, 6 + ((extract(epoch FROM m)::bigint / 3600) % 24) / 6
		  FROM generate_series(date_trunc('minute', now()) - interval '7 days', date_trunc('minute', now()) - interval '1 minute', interval '1 minute') m
		ON CONFLICT DO NOTHING`)
	finding := b.findingOf(t, "pi_review_0")
	shots := []struct {
		name, path string
		w, h       int
		wait       string
	}{
		{"login", "/console/login", 1280, 800, "#password"},
		{"overview", "/console/", 1280, 800, "svg"},
		{"findings", "/console/findings?state=all", 1280, 800, "table.findings"},
		{"finding", fmt.Sprintf("/console/findings/%d", finding), 1280, 800, "ol.timeline"},
		{"findings-phone", "/console/findings", 390, 844, "table.findings"},
	}
	ctx := browsertest.New(t, 1280, 800, 2*time.Minute)
	for _, s := range shots {
		if s.name == "overview" { // log in after the login page's shot
			run(t, ctx, "log in", chromedp.SendKeys(css("#name"), "alice"), chromedp.SendKeys(css("#password"), password),
				chromedp.Submit(css("#password")), chromedp.WaitVisible(css("nav")))
		}
		var img []byte
		run(t, ctx, "screenshot "+s.name,
			chromedp.EmulateViewport(int64(s.w), int64(s.h)),
			chromedp.Navigate(b.admin+s.path),
			chromedp.WaitVisible(css(s.wait)),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				var err error
				img, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
				return err
			}),
		)
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", s.name, err)
		}
		if cfg.Width != s.w || cfg.Height < s.h/2 {
			t.Errorf("%s: %d×%d, want %d wide", s.name, cfg.Width, cfg.Height, s.w)
		}
		// Nothing wider than the viewport: no horizontal scrolling of the page.
		sw, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
		if err != nil || sw > s.w {
			t.Errorf("%s: the page is %d wide at a %d viewport (%v)", s.name, sw, s.w, err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+".png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d×%d, %s KiB", s.name, cfg.Width, cfg.Height, strconv.Itoa(len(img)/1024))
	}
}
