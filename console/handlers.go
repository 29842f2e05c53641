package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payrecon/payrecon"
)

// page is what every template gets.
type page struct {
	Title    string
	Nav      string
	Operator string
	CSRF     string
	Open     bool
	Flash    string
	Now      time.Time
	Data     any
	// Connect: payments has the account column (the Accounts pages).
	Connect bool
}

// page wraps a handler that fills a page: it needs a session, and the
// response is never cached.
func (c *Console) page(h func(http.ResponseWriter, *http.Request, *page) (string, int, error)) http.Handler {
	return c.requireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := sessionFrom(r.Context())
		p := &page{Operator: s.Operator, CSRF: c.auth.csrfToken(s), Open: c.auth.open, Now: c.clock.Now(), Connect: c.cfg.Accounts != nil}
		if fc, err := r.Cookie(flashCookie); err == nil {
			p.Flash = c.auth.readFlash(fc.Value)
			c.auth.setCookie(w, r, flashCookie, "", -1)
		}
		name, status, err := h(w, r, p)
		if err != nil {
			c.fail(w, r, p, err)
			return
		}
		c.render(w, name, status, p)
	}))
}

// statusError is an error with the HTTP status and the words to show.
type statusError struct {
	status int
	msg    string
}

func (e statusError) Error() string { return e.msg }

func badRequest(format string, a ...any) error {
	return statusError{http.StatusBadRequest, fmt.Sprintf(format, a...)}
}

func (c *Console) fail(w http.ResponseWriter, r *http.Request, p *page, err error) {
	var se statusError
	switch {
	case errors.As(err, &se):
	case errors.Is(err, payrecon.ErrNotFound):
		se = statusError{http.StatusNotFound, "not found"}
	case r.Context().Err() != nil:
		return // the client went away
	default:
		c.log.Error("console: page failed", "path", r.URL.Path, "error", err)
		se = statusError{http.StatusInternalServerError, "the page could not be read from the database; see the service's log"}
	}
	p.Title = http.StatusText(se.status)
	p.Data = se.msg
	c.render(w, "error", se.status, p)
}

func (c *Console) render(w http.ResponseWriter, name string, status int, p *page) {
	t, ok := c.pages[name]
	if !ok {
		panic("console: no page " + name)
	}
	var buf strings.Builder
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		c.log.Error("console: render failed", "page", name, "error", err)
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(buf.String()))
}

// overviewData is the overview page.
type overviewData struct {
	Overview
	Stripe              *StripeHealth
	LagChart, OpenChart chart
	// Accounts is a platform's accounts (nil without the account column).
	Accounts *AccountsSummary
}

func (c *Console) handleOverview(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	now := c.clock.Now()
	ov, err := c.cfg.Read.Overview(r.Context(), now)
	if err != nil {
		return "", 0, err
	}
	hist, err := c.cfg.Read.History(r.Context(), now.Add(-historyWindow), historyBucket)
	if err != nil {
		return "", 0, err
	}
	d := overviewData{Overview: ov}
	if c.cfg.StripeHealthFunc != nil {
		h := c.cfg.StripeHealthFunc()
		d.Stripe = &h
	}
	d.LagChart, d.OpenChart = historyCharts(hist, now)
	if c.cfg.Accounts != nil {
		as, err := c.cfg.Accounts.Summary(r.Context(), now)
		if err != nil {
			return "", 0, err
		}
		d.Accounts = &as
	}
	p.Title, p.Nav, p.Data = "Overview", "overview", d
	return "overview", http.StatusOK, nil
}

// The charts' window and resolution.
const (
	historyWindow = 7 * 24 * time.Hour
	historyBucket = time.Hour
)

// ageOption is one choice of the findings list's age filter.
type ageOption struct {
	Value, Label string
	newer, older time.Duration
}

var ageOptions = []ageOption{
	{"", "any age", 0, 0},
	{"1h", "detected in the last hour", time.Hour, 0},
	{"24h", "detected in the last 24 hours", 24 * time.Hour, 0},
	{"7d", "detected in the last 7 days", 7 * 24 * time.Hour, 0},
	{">24h", "older than 24 hours", 0, 24 * time.Hour},
	{">7d", "older than 7 days", 0, 7 * 24 * time.Hour},
}

// filter is the findings list's filter as the form and the links carry it.
type filter struct {
	Kinds    []string
	Verdict  string
	State    string
	Age      string
	After    string
	Query    FindingQuery
	AgeLabel string
	// Account is the account filter as the URL names it (acct_…, or
	// platform): Connect only.
	Account string
}

// values is the filter as query parameters (without the cursor).
func (f filter) values() url.Values {
	v := url.Values{}
	for _, k := range f.Kinds {
		v.Add("kind", k)
	}
	if f.Verdict != "" {
		v.Set("verdict", f.Verdict)
	}
	v.Set("state", f.State)
	if f.Age != "" {
		v.Set("age", f.Age)
	}
	if f.Account != "" {
		v.Set("account", f.Account)
	}
	return v
}

// HasKind reports whether kind is selected (for the form).
func (f filter) HasKind(k payrecon.Kind) bool {
	for _, x := range f.Kinds {
		if x == string(k) {
			return true
		}
	}
	return false
}

// parseFilter reads kind (repeatable), verdict, state, age, account and
// after.
func parseFilter(q url.Values, now time.Time, limit int) (filter, error) {
	f := filter{Verdict: q.Get("verdict"), State: q.Get("state"), Age: q.Get("age"), After: q.Get("after"), Account: q.Get("account")}
	if f.State == "" {
		f.State = "open"
	}
	switch f.State {
	case "open", "resolved", "all":
	default:
		return f, badRequest("state %q: want open, resolved or all", f.State)
	}
	f.Query = FindingQuery{State: f.State, Limit: limit}
	for _, k := range q["kind"] {
		if k == "" {
			continue
		}
		if !validName(k) {
			return f, badRequest("kind %q is not a finding kind", k)
		}
		f.Kinds = append(f.Kinds, k)
		f.Query.Kinds = append(f.Query.Kinds, payrecon.Kind(k))
	}
	switch payrecon.Verdict(f.Verdict) {
	case "":
	case payrecon.Repairable, payrecon.NeedsReview:
		f.Query.Verdicts = []payrecon.Verdict{payrecon.Verdict(f.Verdict)}
	default:
		return f, badRequest("verdict %q: want repairable or needs_review", f.Verdict)
	}
	found := false
	for _, o := range ageOptions {
		if o.Value == f.Age {
			found = true
			f.AgeLabel = o.Label
			if o.newer > 0 {
				f.Query.DetectedAfter = now.Add(-o.newer)
			}
			if o.older > 0 {
				f.Query.DetectedBefore = now.Add(-o.older)
			}
		}
	}
	if !found {
		return f, badRequest("age %q is not one of the choices", f.Age)
	}
	if f.Account != "" {
		acct, ok := parseAccount(f.Account)
		if !ok {
			return f, badRequest("account %s: want acct_… or platform", payrecon.Quote(f.Account, 40))
		}
		f.Query.Account = &acct
	}
	if f.After != "" {
		cur, err := parseCursor(f.After)
		if err != nil {
			return f, badRequest("bad page cursor %q", f.After)
		}
		f.Query.After = &cur
	}
	return f, nil
}

// validName: kinds are snake_case words; anything else is a typo or a probe.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && r != '_' && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func formatCursor(c Cursor) string {
	return strconv.FormatInt(c.DetectedAt.UnixNano(), 10) + "-" + strconv.FormatInt(c.ID, 10)
}

func parseCursor(s string) (Cursor, error) {
	ts, id, ok := strings.Cut(s, "-")
	if !ok {
		return Cursor{}, errors.New("no separator")
	}
	ns, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return Cursor{}, err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return Cursor{}, err
	}
	return Cursor{DetectedAt: time.Unix(0, ns), ID: n}, nil
}

// findingsData is the findings list page.
type findingsData struct {
	Filter   filter
	Kinds    []payrecon.Kind
	Ages     []ageOption
	Rows     []payrecon.Finding
	NextURL  string
	FirstURL string
	CSVURL   string
	Paged    bool
}

func (c *Console) handleFindings(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	f, err := parseFilter(r.URL.Query(), c.clock.Now(), PageSizeDefault)
	if err == nil {
		err = c.checkAccountFilter(f)
	}
	if err != nil {
		return "", 0, err
	}
	rows, more, err := c.cfg.Read.Findings(r.Context(), f.Query)
	if err != nil {
		return "", 0, err
	}
	d := findingsData{Filter: f, Kinds: payrecon.Kinds, Ages: ageOptions, Rows: rows, Paged: f.After != ""}
	v := f.values()
	d.FirstURL = "/console/findings?" + v.Encode()
	d.CSVURL = "/console/findings.csv?" + v.Encode()
	if more && len(rows) > 0 {
		last := rows[len(rows)-1]
		v.Set("after", formatCursor(Cursor{DetectedAt: last.DetectedAt, ID: last.ID}))
		d.NextURL = "/console/findings?" + v.Encode()
	}
	p.Title, p.Nav, p.Data = "Findings", "findings", d
	return "findings", http.StatusOK, nil
}

// findingData is a finding's page.
type findingData struct {
	FindingDetail
}

func pathID(r *http.Request, name string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, statusError{http.StatusNotFound, "no such " + name}
	}
	return id, nil
}

func (c *Console) handleFinding(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	id, err := pathID(r, "id")
	if err != nil {
		return "", 0, err
	}
	d, err := c.cfg.Read.Finding(r.Context(), id)
	if errors.Is(err, payrecon.ErrNotFound) {
		return "", 0, statusError{http.StatusNotFound, fmt.Sprintf("There is no finding %d.", id)}
	}
	if err != nil {
		return "", 0, err
	}
	p.Title, p.Nav, p.Data = fmt.Sprintf("Finding %d", id), "findings", findingData{d}
	return "finding", http.StatusOK, nil
}

// lookupData is the lookup page.
type lookupData struct {
	Q       string
	Matches []PaymentMatch
}

func (c *Console) handleLookup(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	switch {
	case !validText(q):
		return "", 0, badRequest("the search text is not valid text (invalid UTF-8 or a NUL byte)")
	case utf8.RuneCountInString(q) > 255:
		return "", 0, badRequest("the search text is too long")
	}
	d := lookupData{Q: q}
	if q != "" {
		m, err := c.cfg.Read.Lookup(r.Context(), q)
		if err != nil {
			return "", 0, err
		}
		d.Matches = m
	}
	p.Title, p.Nav, p.Data = "Lookup", "lookup", d
	return "lookup", http.StatusOK, nil
}

func (c *Console) handleAudit(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	es, err := c.cfg.Read.Audit(r.Context(), 200)
	if err != nil {
		return "", 0, err
	}
	p.Title, p.Nav, p.Data = "Audit log", "audit", es
	return "audit", http.StatusOK, nil
}

// loginData is the login page.
type loginData struct {
	Next  string
	Name  string
	Error string
}

func (c *Console) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	p := &page{Title: "Log in", Open: c.auth.open, Now: c.clock.Now(), Data: loginData{Next: next}}
	c.render(w, "login", http.StatusOK, p)
}

func (c *Console) handleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	name := cleanOperator(r.PostForm.Get("name"))
	addr := clientAddr(r)
	p := &page{Title: "Log in", Open: c.auth.open, Now: c.clock.Now()}
	if ok, wait := c.auth.logins.allow(clientKey(r), c.clock.Now()); !ok {
		c.log.Warn("console: login refused", "reason", "rate_limited", "operator", name, "remote_addr", addr)
		secs := int(wait.Seconds()) + 1
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		p.Data = loginData{Next: next, Name: name, Error: fmt.Sprintf("%s: try again in %d s.", errLoginThrottled, secs)}
		c.render(w, "login", http.StatusTooManyRequests, p)
		return
	}
	if !c.auth.open && !c.auth.checkPassword(r.PostForm.Get("password")) {
		c.log.Warn("console: login refused", "reason", "wrong_password", "operator", name, "remote_addr", addr)
		p.Data = loginData{Next: next, Name: name, Error: "Wrong password."}
		c.render(w, "login", http.StatusUnauthorized, p)
		return
	}
	s, value, err := c.auth.newSession(r.Context(), name)
	if err != nil {
		c.log.Error("console: new session", "error", err)
		http.Error(w, "could not start a session: the database does not answer; try again", http.StatusServiceUnavailable)
		return
	}
	c.auth.setCookie(w, r, sessionCookie, value, int(c.cfg.SessionTTL.Seconds()))
	c.log.Info("console: login", "operator", s.Operator, "remote_addr", addr, "expires", s.Expires.UTC().Format(time.RFC3339))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) handleLogout(w http.ResponseWriter, r *http.Request, s session) {
	if err := c.auth.endSession(r.Context(), s); err != nil {
		c.log.Error("console: logout", "operator", s.Operator, "error", err)
		http.Error(w, "the session could not be ended: the database does not answer; try again", http.StatusServiceUnavailable)
		return
	}
	c.auth.setCookie(w, r, sessionCookie, "", -1)
	c.log.Info("console: logout", "operator", s.Operator, "remote_addr", clientAddr(r))
	http.Redirect(w, r, "/console/login", http.StatusSeeOther)
}

// maxNote bounds a resolution note, in characters (as the form's
// maxlength counts them).
const maxNote = 2000

// validText reports whether s can be stored and searched as text: valid
// UTF-8 without NUL bytes (PostgreSQL refuses both).
func validText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

func (c *Console) handleResolve(w http.ResponseWriter, r *http.Request, s session) {
	id, err := pathID(r, "id")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	back := fmt.Sprintf("/console/findings/%d", id)
	note := strings.TrimSpace(r.PostForm.Get("note"))
	switch {
	case note == "":
		c.redirectWith(w, r, back, "Not resolved: say why in the note.")
		return
	case !validText(note):
		c.redirectWith(w, r, back, "Not resolved: the note is not valid text (invalid UTF-8 or a NUL byte).")
		return
	case utf8.RuneCountInString(note) > maxNote:
		c.redirectWith(w, r, back, fmt.Sprintf("Not resolved: the note is longer than %d characters.", maxNote))
		return
	}
	err = c.cfg.Actions.Resolve(r.Context(), id, s.Operator, note)
	msg := fmt.Sprintf("Finding %d resolved by %s.", id, s.Operator)
	switch {
	case errors.Is(err, payrecon.ErrNotFound):
		http.NotFound(w, r)
		return
	case err != nil:
		c.log.Warn("console: resolve failed", "finding_id", id, "operator", s.Operator, "error", err)
		msg = "Not resolved: " + err.Error()
	default:
		c.log.Info("console: finding resolved", "finding_id", id, "operator", s.Operator)
	}
	c.redirectWith(w, r, back, msg)
}

func (c *Console) handleRecheck(w http.ResponseWriter, r *http.Request, s session) {
	id, err := pathID(r, "id")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	res, err := c.cfg.Actions.Recheck(r.Context(), id, s.Operator)
	switch {
	case errors.Is(err, payrecon.ErrNotFound):
		http.NotFound(w, r)
		return
	case err != nil:
		c.log.Warn("console: recheck failed", "finding_id", id, "operator", s.Operator, "error", err)
		res = "Recheck failed: " + err.Error()
	default:
		c.log.Info("console: finding rechecked", "finding_id", id, "operator", s.Operator)
	}
	c.redirectWith(w, r, fmt.Sprintf("/console/findings/%d", id), res)
}

func (c *Console) handleRetry(w http.ResponseWriter, r *http.Request, s session) {
	job, err := pathID(r, "job")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	back := safeNext(r.PostForm.Get("return"))
	res, err := c.cfg.Actions.RetryDeadLetter(r.Context(), job, s.Operator)
	if err != nil {
		c.log.Warn("console: retry failed", "job_id", job, "operator", s.Operator, "error", err)
		res = "Retry failed: " + err.Error()
	} else {
		c.log.Info("console: dead letter retried", "job_id", job, "operator", s.Operator)
	}
	c.redirectWith(w, r, back, res)
}

// heldLimit bounds the held repairs page.
const heldLimit = 500

func (c *Console) handleHeldRepairs(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	held, err := c.cfg.Read.HeldRepairs(r.Context(), heldLimit)
	if err != nil {
		return "", 0, err
	}
	p.Title, p.Nav, p.Data = "Held repairs", "repairs", held
	return "repairs", http.StatusOK, nil
}

func (c *Console) handleApprove(w http.ResponseWriter, r *http.Request, s session) {
	id, err := pathID(r, "id")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	c.approve(w, r, s, []int64{id}, false)
}

func (c *Console) handleApproveAll(w http.ResponseWriter, r *http.Request, s session) {
	c.approve(w, r, s, nil, true)
}

func (c *Console) approve(w http.ResponseWriter, r *http.Request, s session, ids []int64, all bool) {
	back := "/console/repairs"
	if ret := r.PostForm.Get("return"); ret != "" {
		back = safeNext(ret)
	}
	res, err := c.cfg.Actions.ApproveRepairs(r.Context(), ids, all, s.Operator)
	if err != nil {
		c.log.Warn("console: approval failed", "outbox_ids", ids, "all", all, "operator", s.Operator, "error", err)
		res = "Approval failed: " + err.Error()
	} else {
		c.log.Info("console: repairs approved", "outbox_ids", ids, "all", all, "operator", s.Operator)
	}
	c.redirectWith(w, r, back, res)
}
