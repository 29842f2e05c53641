// Package console is payrecon's operator console: server-rendered pages
// (html/template, CSS embedded in the binary, no JavaScript needed) on the
// admin listener, under /console/.
//
// # Pages
//
// The overview (lag, cycle progress and projection, B × R against G, open
// findings by kind with the money at stake, the repair and notification
// queues, dead letters, Stripe's health, and charts of the last 7 days
// drawn as SVG on the server); the findings list with filters, keyset
// pagination and a CSV export of the same filter; a finding's page with
// the payment, what Stripe said and a timeline; a lookup by payment id,
// order id or PaymentIntent id; the repairs held for review
// (--repair-mode review), each with Approve, and Approve all; the audit log
// of console actions; on a platform on Connect (Config.Accounts), the
// accounts (each connected account's sweep job: lag, last cycle, open
// findings) and a page per account (its cycle, cursor, rechecks, events
// catch-up and open findings); the payouts read (each automatic payout's lines,
// matched or not, its own check, and the same CSV as `payrecon payouts
// export`).
//
// # Access
//
// With a password (Config.Password) every page and River's dashboard
// (Protect) need a login: POST /console/login with the form field password
// (and optionally name, recorded with the operator's actions) sets an
// HttpOnly, SameSite=Strict session cookie, Secure over TLS or behind a
// proxy that sends X-Forwarded-Proto: https. The cookie is HMAC-signed with
// a key derived from the password (so a password change ends every
// session) and valid only while its session is in the SessionStore, which
// the replicas share: a logout on one ends the session on all. /metrics
// (ProtectMetrics) takes the password as HTTP basic auth or a session,
// unless it is public. Login attempts are rate-limited per client (an IPv4
// address, an IPv6 /64) and for the whole process, and logged (never the
// password). Without a password the console is open to whoever reaches the
// admin listener, which the service allows only on a loopback address, and
// answers only requests whose Host is a loopback name (no DNS rebinding).
//
// Every action (resolve, recheck, retry, approve) is a POST carrying a CSRF token
// bound to the session; cross-site POSTs are refused before the token is
// even read (net/http's CrossOriginProtection). Each action is recorded with
// the operator's name by Actions. Pages only read (ReadModel); the Sampler
// is the console's only other writer.
package console

import (
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// Prefix is where the console is mounted.
const Prefix = "/console/"

// Defaults of Config.
const (
	// SessionTTLDefault is how long a login lasts.
	SessionTTLDefault = 12 * time.Hour
	// KDFIterationsDefault is the PBKDF2-SHA256 iteration count that turns
	// the password into the session key (OWASP's figure).
	KDFIterationsDefault = 600_000
	// LoginsPerMinuteDefault and LoginBurstDefault limit login attempts per
	// client address (an IPv6 client: its /64).
	LoginsPerMinuteDefault = 6
	LoginBurstDefault      = 5
	// LoginsPerMinuteTotalDefault and LoginBurstTotalDefault limit login
	// attempts of all clients together: a flood from many addresses gets
	// no more than these (and, while it lasts, locks new logins out;
	// sessions already open go on working).
	LoginsPerMinuteTotalDefault = 30
	LoginBurstTotalDefault      = 20
	// PageSizeDefault is the findings list's page size.
	PageSizeDefault = readmodel.PageSizeDefault
)

// Config configures the console.
type Config struct {
	// Password, when set, is required to log in. Empty: the console is open.
	Password string
	// Read is the read model the pages use.
	Read ReadModel
	// Actions are the operator's actions.
	Actions Actions
	// Payouts, when set, is what the Payouts page reads; nil: the page
	// says the payouts check is off.
	Payouts PayoutsReader
	// Accounts, when set (payments has the account column: a platform on
	// Connect), is what the Accounts pages and the overview's accounts
	// read; nil: one account, and no Accounts pages.
	Accounts AccountsReader
	// Sessions keeps the sessions on the server (postgres.ConsoleSessions).
	Sessions SessionStore
	// StripeHealthFunc, when set, reports the Stripe client's state for the
	// overview.
	StripeHealthFunc func() StripeHealth
	// Logger receives login and action logs; nil discards them.
	Logger *slog.Logger
	// Clock gives the time of pages and sessions; default the system clock.
	Clock payrecon.Clock
	// SessionTTL is how long a login lasts (default SessionTTLDefault).
	SessionTTL time.Duration
	// KDFIterations is PBKDF2's iteration count (default
	// KDFIterationsDefault; tests lower it).
	KDFIterations int
	// LoginsPerMinute and LoginBurst rate-limit logins per client address
	// (defaults LoginsPerMinuteDefault, LoginBurstDefault).
	LoginsPerMinute float64
	LoginBurst      int
	// LoginsPerMinuteTotal and LoginBurstTotal rate-limit the logins of all
	// clients together (defaults LoginsPerMinuteTotalDefault,
	// LoginBurstTotalDefault).
	LoginsPerMinuteTotal float64
	LoginBurstTotal      int
}

// Console serves the console's pages.
type Console struct {
	cfg   Config
	log   *slog.Logger
	clock payrecon.Clock
	auth  *auth
	pages map[string]*template.Template
	mux   *http.ServeMux
	cop   *http.CrossOriginProtection
}

// New builds the console.
func New(cfg Config) (*Console, error) {
	if cfg.Read == nil || cfg.Actions == nil || cfg.Sessions == nil {
		return nil, errors.New("console: a read model, actions and a session store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = SessionTTLDefault
	}
	if cfg.KDFIterations <= 0 {
		cfg.KDFIterations = KDFIterationsDefault
	}
	if cfg.LoginsPerMinute <= 0 {
		cfg.LoginsPerMinute = LoginsPerMinuteDefault
	}
	if cfg.LoginBurst <= 0 {
		cfg.LoginBurst = LoginBurstDefault
	}
	if cfg.LoginsPerMinuteTotal <= 0 {
		cfg.LoginsPerMinuteTotal = LoginsPerMinuteTotalDefault
	}
	if cfg.LoginBurstTotal <= 0 {
		cfg.LoginBurstTotal = LoginBurstTotalDefault
	}
	logins := newLoginLimiter(cfg.LoginsPerMinute, cfg.LoginBurst, cfg.LoginsPerMinuteTotal, cfg.LoginBurstTotal)
	a, err := newAuth(cfg.Password, cfg.KDFIterations, cfg.SessionTTL, cfg.Clock.Now, logins, cfg.Sessions)
	if err != nil {
		return nil, fmt.Errorf("console: session key: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, auth: a, pages: pages,
		mux: http.NewServeMux(), cop: http.NewCrossOriginProtection()}
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.log.Warn("console: cross-origin request refused", "method", r.Method, "path", r.URL.Path,
			"origin", r.Header.Get("Origin"), "remote_addr", clientAddr(r))
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	c.routes()
	return c, nil
}

// Open reports whether the console has no password.
func (c *Console) Open() bool { return c.auth.open }

// ServeHTTP serves /console/.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	frameHeaders(w.Header())
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if !c.hostAllowed(w, r) {
		return
	}
	c.mux.ServeHTTP(w, r)
}

// frameHeaders are the headers of every admin page: never framed (no
// clickjacking), never sniffed into another type, no Referer to elsewhere.
func frameHeaders(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

// Protect wraps another admin handler (River's dashboard) in the console's
// login and cross-origin protection: without a session, GET and HEAD are
// sent to the login page and everything else is refused with 401. Its
// answers are never framed (X-Frame-Options, CSP frame-ancestors) nor
// sniffed, and, without a password, served only to loopback Host names.
func (c *Console) Protect(h http.Handler) http.Handler {
	inner := c.cop.Handler(c.requireSession(h))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		frameHeaders(w.Header())
		w.Header().Set("Content-Security-Policy", "frame-ancestors 'none'")
		if !c.hostAllowed(w, r) {
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// ProtectMetrics wraps the admin listener's /metrics. Without a password it
// is served to loopback Host names only (as the console is). With one it
// needs a session cookie or HTTP basic auth with the console password (any
// user name; Prometheus's basic_auth), whose wrong guesses count against
// the login limits, unless public is set (--metrics-public): then anyone
// who reaches the admin address reads the metrics.
func (c *Console) ProtectMetrics(h http.Handler, public bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !c.hostAllowed(w, r) {
			return
		}
		if c.auth.open || public {
			h.ServeHTTP(w, r)
			return
		}
		if _, pw, ok := r.BasicAuth(); ok {
			addr, key := clientAddr(r), clientKey(r)
			if wait := c.auth.logins.wait(key, c.clock.Now()); wait > 0 {
				c.log.Warn("console: metrics refused", "reason", "rate_limited", "remote_addr", addr)
				w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
				http.Error(w, errLoginThrottled.Error(), http.StatusTooManyRequests)
				return
			}
			if c.auth.checkPassword(pw) {
				h.ServeHTTP(w, r)
				return
			}
			c.auth.logins.allow(key, c.clock.Now()) // a wrong guess costs what a login does
			c.log.Warn("console: metrics refused", "reason", "wrong_password", "remote_addr", addr)
		} else if _, ok, err := c.auth.resolve(r); err != nil {
			c.sessionUnchecked(w, r, err)
			return
		} else if ok {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="payrecon metrics", charset="UTF-8"`)
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, "/metrics needs the console password (HTTP basic auth, any user name) or a console session; "+
			"--metrics-public serves it without one", http.StatusUnauthorized)
	})
}

// hostAllowed refuses, on a console without a password, a request whose
// Host is not a loopback name: a page of another site that rebinds its
// name to 127.0.0.1 is same-origin with itself, so neither the cookie's
// SameSite nor the origin checks stop it, but its Host is its own name.
// With a password every Host is served: the login protects the console.
func (c *Console) hostAllowed(w http.ResponseWriter, r *http.Request) bool {
	if !c.auth.open || loopbackHost(r.Host) {
		return true
	}
	c.log.Warn("console: request refused: the console has no password and the Host is not a loopback name (DNS rebinding?)",
		"host", r.Host, "method", r.Method, "path", r.URL.Path, "remote_addr", clientAddr(r))
	http.Error(w, "this console has no password, so it answers only requests addressed to 127.0.0.1, localhost or [::1]; "+
		"set PAYRECON_CONSOLE_PASSWORD to reach it under another name", http.StatusForbidden)
	return false
}

// loopbackHost reports whether a Host header names this machine's loopback
// interface: localhost, or a loopback IP literal, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// routes is the console's one map.
func (c *Console) routes() {
	m := c.mux
	m.Handle("GET /console/assets/", http.StripPrefix("/console/assets/", assetHandler()))
	m.HandleFunc("GET /console/login", c.handleLoginPage)
	m.Handle("POST /console/login", c.cop.Handler(http.HandlerFunc(c.handleLogin)))
	m.Handle("POST /console/logout", c.action(c.handleLogout))

	m.Handle("GET /console/{$}", c.page(c.handleOverview))
	m.Handle("GET /console/findings", c.page(c.handleFindings))
	m.Handle("GET /console/findings.csv", c.requireSession(http.HandlerFunc(c.handleFindingsCSV)))
	m.Handle("GET /console/findings/{id}", c.page(c.handleFinding))
	m.Handle("GET /console/lookup", c.page(c.handleLookup))
	m.Handle("GET /console/audit", c.page(c.handleAudit))
	m.Handle("GET /console/repairs", c.page(c.handleHeldRepairs))
	m.Handle("GET /console/payouts", c.page(c.handlePayouts))
	m.Handle("GET /console/payouts.csv", c.requireSession(http.HandlerFunc(c.handlePayoutsCSV)))
	m.Handle("GET /console/payouts/{id}", c.page(c.handlePayout))
	m.Handle("GET /console/accounts", c.page(c.handleAccounts))
	m.Handle("GET /console/accounts/{account}", c.page(c.handleAccount))

	m.Handle("POST /console/findings/{id}/resolve", c.action(c.handleResolve))
	m.Handle("POST /console/findings/{id}/recheck", c.action(c.handleRecheck))
	m.Handle("POST /console/dead-letters/{job}/retry", c.action(c.handleRetry))
	m.Handle("POST /console/repairs/{id}/approve", c.action(c.handleApprove))
	m.Handle("POST /console/repairs/approve-all", c.action(c.handleApproveAll))
	m.Handle("/console/", c.requireSession(http.NotFoundHandler()))
}

// requireSession puts the session in the request's context, or turns the
// request away: GET and HEAD to the login page (then back), others 401.
func (c *Console) requireSession(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok, err := c.auth.resolve(r)
		if err != nil {
			c.sessionUnchecked(w, r, err)
			return
		}
		if !ok {
			w.Header().Set("Cache-Control", "no-store")
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/console/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first: POST /console/login", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(contextWith(r.Context(), s)))
	})
}

// sessionUnchecked answers a request whose session the store could not
// check (the database is down): 503, never a page.
func (c *Console) sessionUnchecked(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		c.log.Error("console: check session", "path", r.URL.Path, "error", err)
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "the session could not be checked: the database does not answer; try again", http.StatusServiceUnavailable)
}

// action guards a state-changing POST: same-origin only, a session, and the
// session's CSRF token in the form field csrf.
func (c *Console) action(h func(http.ResponseWriter, *http.Request, session)) http.Handler {
	return c.cop.Handler(c.requireSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		s := sessionFrom(r.Context())
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		if !c.auth.checkCSRF(s, r.PostForm.Get("csrf")) {
			c.log.Warn("console: action refused: missing or bad CSRF token", "path", r.URL.Path,
				"operator", s.Operator, "remote_addr", clientAddr(r))
			http.Error(w, "missing or bad CSRF token: reload the page and try again", http.StatusForbidden)
			return
		}
		h(w, r, s)
	})))
}

// safeNext keeps a post-login redirect on the admin listener's own pages.
func safeNext(next string) string {
	if (strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "/riverui/") || next == "/riverui") &&
		!strings.HasPrefix(next, "//") && !strings.Contains(next, `\`) {
		return next
	}
	return "/console/"
}

// redirectWith sends the browser to target with a one-time message.
func (c *Console) redirectWith(w http.ResponseWriter, r *http.Request, target, msg string) {
	if msg != "" {
		c.auth.setCookie(w, r, flashCookie, c.auth.flash(msg), 60)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}
