package console

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"
)

// Cookie names.
const (
	sessionCookie = "payrecon_console"
	flashCookie   = "payrecon_console_flash"
)

// kdfSalt makes the session key depend on the password and on payrecon: a
// fixed salt, so that every replica sharing the password derives the same
// key and honours the others' sessions.
var kdfSalt = []byte("payrecon console session key v1")

// session is a logged-in operator.
type session struct {
	// ID binds the CSRF token to the session (random, from the cookie).
	ID       string
	Operator string
	Expires  time.Time
}

type ctxKey struct{}

func sessionFrom(ctx context.Context) session {
	s, _ := ctx.Value(ctxKey{}).(session)
	return s
}

// auth signs and checks sessions, CSRF tokens and flash messages with one
// key. With a password the key is derived from it (PBKDF2): a cookie
// signed by one replica is valid on every replica with the same password,
// and guessing the password from a stolen cookie costs as much as from a
// PBKDF2 hash. Without one the key is random, per process.
type auth struct {
	key      []byte
	password [32]byte // sha256 of the password, compared in constant time
	open     bool
	ttl      time.Duration
	now      func() time.Time
	logins   *loginLimiter
	sessions SessionStore
}

func newAuth(password string, iterations int, ttl time.Duration, now func() time.Time, logins *loginLimiter, sessions SessionStore) (*auth, error) {
	a := &auth{open: password == "", ttl: ttl, now: now, logins: logins, sessions: sessions}
	if a.open {
		a.key = make([]byte, 32)
		if _, err := rand.Read(a.key); err != nil {
			return nil, err
		}
		return a, nil
	}
	key, err := pbkdf2.Key(sha256.New, password, kdfSalt, iterations, 32)
	if err != nil {
		return nil, err
	}
	a.key = key
	a.password = sha256.Sum256([]byte(password))
	return a, nil
}

// checkPassword compares in constant time (of the hashes, so the length of
// the password does not leak either).
func (a *auth) checkPassword(given string) bool {
	h := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(h[:], a.password[:]) == 1
}

func (a *auth) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, a.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

var b64 = base64.RawURLEncoding

// newSession starts a session for operator, recorded in the session
// store, and signs its cookie: "v1.<expiry>.<id>.<operator>.<mac>".
func (a *auth) newSession(ctx context.Context, operator string) (session, string, error) {
	id := make([]byte, 16)
	if _, err := rand.Read(id); err != nil {
		return session{}, "", err
	}
	now := a.now()
	s := session{ID: hex.EncodeToString(id), Operator: operator, Expires: now.Add(a.ttl)}
	if err := a.sessions.StartSession(ctx, sessionHash(s.ID), operator, now, s.Expires); err != nil {
		return session{}, "", err
	}
	exp := strconv.FormatInt(s.Expires.Unix(), 10)
	op := b64.EncodeToString([]byte(operator))
	return s, strings.Join([]string{"v1", exp, s.ID, op, b64.EncodeToString(a.mac("session", exp, s.ID, op))}, "."), nil
}

// sessionHash is how the session store knows a session.
func sessionHash(id string) []byte {
	h := sha256.Sum256([]byte(id))
	return h[:]
}

// endSession deletes the session from the store (the anonymous session of
// an open console has nothing to end).
func (a *auth) endSession(ctx context.Context, s session) error {
	if s.ID == openSessionID {
		return nil
	}
	return a.sessions.EndSession(ctx, sessionHash(s.ID))
}

// parseSession checks a cookie value: its MAC (in constant time) and its
// expiry; resolve then asks the store whether it is still open.
func (a *auth) parseSession(v string) (session, bool) {
	p := strings.Split(v, ".")
	if len(p) != 5 || p[0] != "v1" {
		return session{}, false
	}
	got, err := b64.DecodeString(p[4])
	if err != nil || !hmac.Equal(got, a.mac("session", p[1], p[2], p[3])) {
		return session{}, false
	}
	exp, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil || !a.now().Before(time.Unix(exp, 0)) {
		return session{}, false
	}
	op, err := b64.DecodeString(p[3])
	if err != nil {
		return session{}, false
	}
	return session{ID: p[2], Operator: string(op), Expires: time.Unix(exp, 0)}, true
}

// csrfToken is the session's CSRF token: a MAC of its id, so that it is
// bound to the session and needs no storage.
func (a *auth) csrfToken(s session) string {
	return b64.EncodeToString(a.mac("csrf", s.ID))
}

func (a *auth) checkCSRF(s session, token string) bool {
	got, err := b64.DecodeString(token)
	return err == nil && token != "" && hmac.Equal(got, a.mac("csrf", s.ID))
}

// flash signs a one-time message shown after a redirect.
func (a *auth) flash(msg string) string {
	m := b64.EncodeToString([]byte(msg))
	return m + "." + b64.EncodeToString(a.mac("flash", m))
}

func (a *auth) readFlash(v string) string {
	m, sig, ok := strings.Cut(v, ".")
	got, err := b64.DecodeString(sig)
	if !ok || err != nil || !hmac.Equal(got, a.mac("flash", m)) {
		return ""
	}
	b, err := b64.DecodeString(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// secure reports whether the request reached us over TLS, directly or
// through a proxy that says so.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (a *auth) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
}

// openSessionID is the anonymous session of a console without a password.
const openSessionID = "open"

// resolve returns the request's session: the cookie's when it is signed,
// unexpired and still in the session store (not logged out); without a
// password, an anonymous one otherwise. An error is the store's: the
// session could not be checked.
func (a *auth) resolve(r *http.Request) (session, bool, error) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if s, ok := a.parseSession(c.Value); ok {
			valid, err := a.sessions.SessionValid(r.Context(), sessionHash(s.ID), a.now())
			if err != nil {
				return session{}, false, err
			}
			if valid {
				return s, true, nil
			}
		}
	}
	if a.open {
		return session{ID: openSessionID, Operator: OperatorDefault}, true, nil
	}
	return session{}, false, nil
}

// OperatorDefault is the name recorded with actions when the operator gave
// none at login (or the console has no password and nobody logged in).
const OperatorDefault = "operator"

// cleanOperator keeps a name short and printable.
func cleanOperator(s string) string {
	s = strings.TrimSpace(s)
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	for utf8.RuneCountInString(s) > 64 {
		_, n := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-n]
	}
	if s == "" {
		return OperatorDefault
	}
	return s
}

// loginLimiter rate-limits login attempts (and wrong metrics passwords)
// per client and for the whole process: a client has a burst, then a
// steady trickle; all clients together have a larger burst and trickle, so
// that a flood from many addresses gets no more guesses than the process
// allows. The per-client table is bounded without forgetting anyone who is
// throttled: when it is full, only entries whose bucket has refilled (which
// hold nothing a new entry would not) are dropped, and a client that finds
// it still full shares one overflow bucket with the others in that case.
type loginLimiter struct {
	mu       sync.Mutex
	perMin   float64
	burst    int
	global   *rate.Limiter
	overflow *rate.Limiter
	clients  map[string]*rate.Limiter
	max      int
}

// loginLimiterMaxClients bounds the per-client table. With the global
// limit in front (an entry is made only for an attempt the global bucket
// let through), it holds at most the attempts of the last refill period.
const loginLimiterMaxClients = 4096

func newLoginLimiter(perMinute float64, burst int, totalPerMinute float64, totalBurst int) *loginLimiter {
	return &loginLimiter{perMin: perMinute, burst: burst, max: loginLimiterMaxClients,
		global:   rate.NewLimiter(rate.Limit(totalPerMinute/60), totalBurst),
		overflow: rate.NewLimiter(rate.Limit(perMinute/60), burst),
		clients:  map[string]*rate.Limiter{}}
}

// allow takes a token for the client at now, from its bucket and the
// global one (both or neither); when either is empty it says how long
// until both have one.
func (l *loginLimiter) allow(client string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.waitLocked(client, now); d > 0 {
		return false, d
	}
	l.global.AllowN(now, 1)
	l.clientLocked(client, now).AllowN(now, 1)
	return true, 0
}

// wait says how long until the client could try (0: now), taking nothing.
func (l *loginLimiter) wait(client string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitLocked(client, now)
}

func (l *loginLimiter) waitLocked(client string, now time.Time) time.Duration {
	d := tokenWait(l.global, now)
	if c, ok := l.clients[client]; ok {
		d = max(d, tokenWait(c, now))
	} else if len(l.clients) >= l.max {
		d = max(d, tokenWait(l.overflow, now)) // clientLocked may have to use it
	}
	return d
}

// clientLocked returns the client's bucket, making one when there is room.
func (l *loginLimiter) clientLocked(client string, now time.Time) *rate.Limiter {
	if c, ok := l.clients[client]; ok {
		return c
	}
	if len(l.clients) >= l.max {
		for k, c := range l.clients {
			if c.TokensAt(now) >= float64(l.burst) {
				delete(l.clients, k) // refilled: a new entry would be the same
			}
		}
		if len(l.clients) >= l.max {
			return l.overflow
		}
	}
	c := rate.NewLimiter(rate.Limit(l.perMin/60), l.burst)
	l.clients[client] = c
	return c
}

// tokenWait is how long until lim has a token at now.
func tokenWait(lim *rate.Limiter, now time.Time) time.Duration {
	t := lim.TokensAt(now)
	if t >= 1 {
		return 0
	}
	if lim.Limit() <= 0 {
		return time.Hour
	}
	return time.Duration((1 - t) / float64(lim.Limit()) * float64(time.Second))
}

// clientAddr is the address logs name: the TCP peer. Forwarded headers are
// not trusted, since anyone can send them.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientKey is the client rate limits apply to: the peer's IPv4 address, or
// its IPv6 /64 (one machine is given a whole /64, and would otherwise have
// 2^64 addresses to rotate through).
func clientKey(r *http.Request) string {
	host := clientAddr(r)
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// errLoginThrottled is the login limiter's refusal.
var errLoginThrottled = errors.New("too many login attempts")

func contextWith(ctx context.Context, s session) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}
