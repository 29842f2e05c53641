package stripesim

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stripe/stripe-go/v85"
	"golang.org/x/time/rate"

	"github.com/payrecon/payrecon"
)

// DefaultSecretKey is the API key the simulator accepts when Config.SecretKey
// is empty.
const DefaultSecretKey = "sk_test_sim"

// Endpoint names, used by Stats and by per-endpoint rate limits.
const (
	EndpointRetrieveIntent = "retrieve_payment_intent"
	EndpointListIntents    = "list_payment_intents"
	EndpointListEvents     = "list_events"
	EndpointOther          = "other"
)

// Config configures a simulator. The zero value is ready to use.
type Config struct {
	// Addr is the TCP address to listen on; empty means "127.0.0.1:0", a
	// free loopback port.
	Addr string
	// SecretKey is the only API key accepted; empty means DefaultSecretKey.
	SecretKey string
	// Seed seeds the one random source behind generated ids, jitter, fault
	// probabilities and webhook drop/duplicate/reorder decisions.
	Seed uint64
	// Clock stamps created times of new intents and events, and drives the
	// rate limiter; nil means payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives the simulator's own diagnostics; nil discards them.
	Logger *slog.Logger
	// Faults are the faults in force from the start; see SetFaults.
	Faults Faults
	// Webhook is the webhook endpoint in force from the start; see SetWebhook.
	Webhook WebhookConfig
	// WebhookClient sends webhook deliveries; nil means a client of the
	// simulator's own with a 10 s timeout.
	WebhookClient *http.Client
}

// Server is a running simulator. All methods are safe for concurrent use.
type Server struct {
	key       string
	clock     payrecon.Clock
	log       *slog.Logger
	url       string
	mux       *http.ServeMux
	srv       *http.Server
	serveDone chan struct{}
	closing   chan struct{}
	closeOnce sync.Once

	lifeMu   sync.RWMutex // guards closed, and orders inflight.Add before Wait
	closed   bool
	inflight sync.WaitGroup

	requestSeq atomic.Int64
	active     atomic.Int64

	rngMu sync.Mutex // always taken last
	rng   *rand.Rand

	mu      sync.RWMutex // guards intents, events and payouts
	intents *intentIndex
	events  *eventLog
	payouts *payoutStore
	// sessions are the Checkout Sessions (sessions.go).
	sessions sessionIndex

	faultMu  sync.Mutex
	faults   Faults
	limiters map[string]*rate.Limiter
	failNext []Failure
	failID   map[string]Failure

	hookMu     sync.Mutex
	hook       WebhookConfig
	hookClient *http.Client
	ownClient  bool

	statsMu sync.Mutex
	stats   Stats
}

// Start listens on cfg.Addr and serves the simulated API until Close.
func Start(cfg Config) (*Server, error) {
	addr := cmp.Or(cfg.Addr, "127.0.0.1:0")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("stripesim: listen on %s: %w", addr, err)
	}
	s := newServer(cfg)
	s.url = "http://" + ln.Addr().String()
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.serveDone)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("stripesim: serve", "error", err)
		}
	}()
	return s, nil
}

func newServer(cfg Config) *Server {
	s := &Server{
		key:       cmp.Or(cfg.SecretKey, DefaultSecretKey),
		clock:     cfg.Clock,
		log:       cfg.Logger,
		serveDone: make(chan struct{}),
		closing:   make(chan struct{}),
		rng:       rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		intents:   newIntentIndex(),
		events:    newEventLog(),
		payouts:   newPayoutStore(),
		faults:    cfg.Faults,
		limiters:  make(map[string]*rate.Limiter),
		failID:    make(map[string]Failure),
		hook:      cfg.Webhook,
		stats:     newStats(),
	}
	if s.clock == nil {
		s.clock = payrecon.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hookClient = cfg.WebhookClient
	if s.hookClient == nil {
		s.hookClient = &http.Client{
			Timeout:   10 * time.Second,
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
		}
		s.ownClient = true
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /v1/payment_intents/{id}", s.handleRetrieveIntent)
	s.mux.HandleFunc("GET /v1/payment_intents", s.handleListIntents)
	s.mux.HandleFunc("GET /v1/events", s.handleListEvents)
	s.mux.HandleFunc("GET /v1/checkout/sessions/{id}", s.handleRetrieveSession)
	s.mux.HandleFunc("GET /v1/checkout/sessions", s.handleListSessions)
	s.mux.HandleFunc("GET /v1/payouts", s.handleListPayouts)
	s.mux.HandleFunc("GET /v1/payouts/{id}", s.handleRetrievePayout)
	s.mux.HandleFunc("GET /v1/balance_transactions", s.handleListBalanceTransactions)
	s.mux.HandleFunc("/", s.handleUnknown)
	return s
}

// URL returns the base URL, "http://127.0.0.1:<port>", to use as the API
// base (STRIPE_API_BASE, stripe-go's BackendConfig.URL).
func (s *Server) URL() string { return s.url }

// SecretKey returns the API key the simulator accepts.
func (s *Server) SecretKey() string { return s.key }

// InFlight returns the number of requests being handled now, those held by
// latency or a hang included: tests wait on it instead of sleeping.
func (s *Server) InFlight() int { return int(s.active.Load()) }

// Close stops the server: hanging and delayed requests are released at once,
// connections are closed, and Close returns after every handler has
// returned. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.lifeMu.Lock()
		s.closed = true
		s.lifeMu.Unlock()
		if s.srv != nil {
			_ = s.srv.Close() // closes the connections of held requests too
			<-s.serveDone
		}
		close(s.closing)
		s.inflight.Wait()
		if s.ownClient {
			s.hookClient.CloseIdleConnections()
		}
	})
}

// ServeHTTP serves one request of the simulated API; Start serves it on its
// listener. A request that is held (latency or a hang) and then released by
// the client leaving or by Close is aborted with http.ErrAbortHandler, so
// that it never gets an answer.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.lifeMu.RLock()
	if s.closed {
		s.lifeMu.RUnlock()
		http.Error(w, "stripesim: closed", http.StatusServiceUnavailable)
		return
	}
	s.inflight.Add(1)
	s.lifeMu.RUnlock()
	defer s.inflight.Done()
	s.active.Add(1)
	defer s.active.Add(-1)

	endpoint, intentID := classifyRequest(r)
	sw := &statusWriter{ResponseWriter: w}
	defer func() { s.count(endpoint, sw.status) }()
	h := sw.Header()
	h.Set("Request-Id", fmt.Sprintf("req_sim%011d", s.requestSeq.Add(1)))
	h.Set("Stripe-Version", cmp.Or(r.Header.Get("Stripe-Version"), stripe.APIVersion))

	p := s.plan(intentID)
	if p.latency > 0 && !s.wait(r, p.latency) {
		panic(http.ErrAbortHandler) // no answer at all, not an empty 200
	}
	if p.hang {
		s.hang(r)
		panic(http.ErrAbortHandler)
	}
	if p.failure != nil {
		s.writeFailure(sw, endpoint, *p.failure)
		return
	}
	if !s.authorize(sw, r, endpoint, p) {
		return
	}
	if ok, rl := s.allow(endpoint, r.Header.Get("Stripe-Account")); !ok {
		s.writeRateLimited(sw, rl)
		return
	}
	s.mux.ServeHTTP(sw, r)
}

// classifyRequest names the endpoint of r and, for a retrieve, the intent id.
func classifyRequest(r *http.Request) (endpoint, intentID string) {
	if r.Method != http.MethodGet {
		return EndpointOther, ""
	}
	switch p := r.URL.EscapedPath(); {
	case classifyPayoutRequest(p) != "":
		return classifyPayoutRequest(p), ""
	case p == "/v1/payment_intents":
		return EndpointListIntents, ""
	case p == "/v1/events":
		return EndpointListEvents, ""
	case p == "/v1/checkout/sessions":
		return EndpointListSessions, ""
	case strings.HasPrefix(p, "/v1/checkout/sessions/"):
		rest := strings.TrimPrefix(p, "/v1/checkout/sessions/")
		if id, err := url.PathUnescape(rest); err == nil && rest != "" && !strings.Contains(rest, "/") {
			return EndpointRetrieveSession, id
		}
		return EndpointOther, ""
	case strings.HasPrefix(p, "/v1/payment_intents/"):
		rest := strings.TrimPrefix(p, "/v1/payment_intents/")
		if rest == "" || strings.Contains(rest, "/") {
			return EndpointOther, ""
		}
		id, err := url.PathUnescape(rest)
		if err != nil {
			return EndpointOther, ""
		}
		return EndpointRetrieveIntent, id
	}
	return EndpointOther, ""
}

// wait holds the request for d; it reports false if the client gave up or
// the server is closing.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.closing:
	}
	return false
}

// hang holds the request until the client gives up or the server closes.
// The caller then aborts the handler, so that no answer is ever sent.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closing:
	}
}

// authorize answers 401 or 403 as Stripe does and reports whether the request
// may go on.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, endpoint string, p plan) bool {
	auth := r.Header.Get("Authorization")
	given, isBearer := strings.CutPrefix(auth, "Bearer ")
	switch {
	case auth == "" || (isBearer && strings.TrimSpace(given) == ""):
		w.Header().Set("Www-Authenticate", `Bearer realm="Stripe"`)
		s.writeError(w, http.StatusUnauthorized, apiError{
			Type: "invalid_request_error",
			Message: "You did not provide an API key. You need to provide your API key in the Authorization header, " +
				"using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication " +
				"for details, or we can help at https://support.stripe.com/.",
		})
		return false
	case !isBearer || given != s.key || p.unauthorized:
		if !isBearer {
			given = auth
		}
		w.Header().Set("Www-Authenticate", `Bearer realm="Stripe"`)
		s.writeError(w, http.StatusUnauthorized, apiError{
			Type:    "invalid_request_error",
			Message: "Invalid API Key provided: " + maskKey(given),
		})
		return false
	case p.forbidden:
		s.writeForbidden(w, endpointPermission(endpoint), given)
		return false
	}
	if len(p.missing) > 0 && endpoint != EndpointOther {
		for _, perm := range requiredPermissions(endpoint, r) {
			if slices.Contains(p.missing, perm) {
				s.writeForbidden(w, perm, given)
				return false
			}
		}
	}
	return true
}

// maskKey masks a key as Stripe does in its 401 message: the prefix up to
// the mode, stars, and the last four characters.
func maskKey(key string) string {
	prefix := ""
	for _, p := range []string{"sk_test_", "sk_live_", "rk_test_", "rk_live_", "pk_test_", "pk_live_"} {
		if strings.HasPrefix(key, p) {
			prefix = p
			break
		}
	}
	rest := strings.TrimPrefix(key, prefix)
	if len(rest) <= 4 {
		return prefix + "****"
	}
	return prefix + "****" + rest[len(rest)-4:]
}

// statusWriter records the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// randFloat returns a float in [0, 1) from the seeded source.
func (s *Server) randFloat() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}

const idAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newID returns prefix followed by 24 characters from the seeded source, the
// shape of Stripe's ids ("pi_…", "evt_…").
func (s *Server) newID(prefix string) string {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	b := make([]byte, 0, len(prefix)+24)
	b = append(b, prefix...)
	for range 24 {
		b = append(b, idAlphabet[s.rng.IntN(len(idAlphabet))])
	}
	return string(b)
}

// retryAfterHeader formats d as whole seconds, rounded up.
func retryAfterHeader(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}
