package stripesim

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"golang.org/x/time/rate"
)

// Faults are the faults applied to every request. They are checked in this
// order: latency, an injected failure (FailID, then FailNext, then HangRate,
// then ErrorRate), authentication (Unauthorized, Forbidden, the key), the
// rate limit, and only then the endpoint itself.
type Faults struct {
	// Latency delays every answer.
	Latency time.Duration
	// Jitter adds a uniform random delay in [0, Jitter).
	Jitter time.Duration
	// ErrorRate is the probability, 0..1, that a request fails with
	// ErrorStatus.
	ErrorRate float64
	// ErrorStatus is the status of ErrorRate failures; 0 means 500. See
	// Failure for the body each status gets.
	ErrorStatus int
	// ShouldRetry, when not empty, is sent as Stripe-Should-Retry with
	// ErrorRate failures.
	ShouldRetry string
	// HangRate is the probability, 0..1, that a request is held without an
	// answer until the client gives up or the server closes.
	HangRate float64
	// Unauthorized answers every request 401 as if the key were revoked.
	Unauthorized bool
	// Forbidden answers every request 403 as if the key were a restricted
	// key without read permission.
	Forbidden bool
	// MissingPermissions makes the key a restricted key that lacks these
	// permissions (PermissionPaymentIntentRead, PermissionChargeRead,
	// PermissionEventRead): a request that needs one is answered 403 with
	// Stripe's message naming it. Expanding the latest charge needs
	// PermissionChargeRead besides the endpoint's own; the simulator asks
	// for it whenever the expansion is requested, even if no intent in the
	// answer has a charge.
	MissingPermissions []string
	// RateLimit is a token bucket answered with Stripe's 429.
	RateLimit RateLimit
}

// RateLimit is a server-side token bucket, timed by the simulator's clock.
type RateLimit struct {
	// PerSecond is the sustained rate; 0 disables the limit.
	PerSecond float64
	// Burst is the bucket size; 0 means PerSecond rounded up (at least 1).
	Burst int
	// PerEndpoint gives each endpoint its own bucket, as Stripe's
	// per-endpoint limits do; otherwise one bucket serves the whole server.
	PerEndpoint bool
	// PerAccount gives each Stripe-Account (and the platform, without the
	// header) its own bucket, as Stripe limits each account on its own.
	PerAccount bool
	// Accounts, when set with PerAccount, limits only these accounts ("" is
	// the platform's own): the others are never answered 429, as when one
	// connected account is busy with other integrations.
	Accounts []string
	// RetryAfter, when positive, is sent as Retry-After (whole seconds).
	// Stripe itself does not send it.
	RetryAfter time.Duration
	// ShouldRetry, when not empty, is sent as Stripe-Should-Retry.
	ShouldRetry string
}

// Failure is one injected failed answer. By status, the body is:
// 429 Stripe's rate_limit error; 401 and 403 Stripe's authentication and
// permission errors; 404 resource_missing; 409 an idempotency_error; 500
// Stripe's api_error JSON; any other 5xx the HTML page a load balancer sends
// (not JSON); any other status an invalid_request_error.
type Failure struct {
	// Status is the HTTP status to answer.
	Status int
	// Hang holds the request instead of answering (Status is ignored).
	Hang bool
	// RetryAfter, when positive, is sent as Retry-After (whole seconds).
	RetryAfter time.Duration
	// ShouldRetry, when not empty, is sent as Stripe-Should-Retry.
	ShouldRetry string
	// Message replaces the default message of JSON bodies.
	Message string
}

// SetFaults replaces the faults in force and resets the rate limiter. It
// affects requests that have not yet passed the fault checks.
func (s *Server) SetFaults(f Faults) {
	f.MissingPermissions = slices.Clone(f.MissingPermissions)
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	f.RateLimit.Accounts = slices.Clone(f.RateLimit.Accounts)
	s.faults = f
	clear(s.limiters)
}

// Faults returns the faults in force.
func (s *Server) Faults() Faults {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	f := s.faults
	f.MissingPermissions = slices.Clone(f.MissingPermissions)
	f.RateLimit.Accounts = slices.Clone(f.RateLimit.Accounts)
	return f
}

// FailNext queues failures for the next requests, one each, to any
// endpoint, before any probabilistic fault.
func (s *Server) FailNext(fs ...Failure) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.failNext = append(s.failNext, fs...)
}

// FailID makes every retrieve of the intent id fail with f until ClearFailID.
func (s *Server) FailID(id string, f Failure) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.failID[id] = f
}

// ClearFailID removes the FailID fault of id.
func (s *Server) ClearFailID(id string) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	delete(s.failID, id)
}

// ClearFaults removes every fault: SetFaults(Faults{}), the FailNext queue
// and every FailID.
func (s *Server) ClearFaults() {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	s.faults = Faults{}
	clear(s.limiters)
	s.failNext = nil
	clear(s.failID)
}

// plan is what the faults decided for one request.
type plan struct {
	latency      time.Duration
	hang         bool
	failure      *Failure
	unauthorized bool
	forbidden    bool
	missing      []string // permissions the key lacks; shared, never modified
}

func (s *Server) plan(intentID string) plan {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	f := s.faults
	p := plan{latency: f.Latency, unauthorized: f.Unauthorized, forbidden: f.Forbidden, missing: f.MissingPermissions}
	if f.Jitter > 0 {
		p.latency += time.Duration(s.randFloat() * float64(f.Jitter))
	}
	if fl, ok := s.failID[intentID]; ok && intentID != "" {
		p.failure = &fl
	} else if len(s.failNext) > 0 {
		fl := s.failNext[0]
		s.failNext = s.failNext[1:]
		p.failure = &fl
	} else if f.HangRate > 0 && s.randFloat() < f.HangRate {
		p.hang = true
	} else if f.ErrorRate > 0 && s.randFloat() < f.ErrorRate {
		st := f.ErrorStatus
		if st == 0 {
			st = http.StatusInternalServerError
		}
		p.failure = &Failure{Status: st, ShouldRetry: f.ShouldRetry}
	}
	if p.failure != nil && p.failure.Hang {
		p.hang, p.failure = true, nil
	}
	return p
}

// allow takes a token from the bucket of endpoint (and account, with
// RateLimit.PerAccount).
func (s *Server) allow(endpoint, account string) (bool, RateLimit) {
	s.faultMu.Lock()
	defer s.faultMu.Unlock()
	rl := s.faults.RateLimit
	if rl.PerSecond <= 0 {
		return true, rl
	}
	key := "server"
	if rl.PerEndpoint {
		key = endpoint
	}
	if rl.PerAccount {
		if len(rl.Accounts) > 0 && !slices.Contains(rl.Accounts, account) {
			return true, rl
		}
		key += "/" + account
	}
	lim, ok := s.limiters[key]
	if !ok {
		burst := rl.Burst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(rl.PerSecond)))
		}
		lim = rate.NewLimiter(rate.Limit(rl.PerSecond), burst) // starts full
		s.limiters[key] = lim
	}
	return lim.AllowN(s.clock.Now(), 1), rl
}

// Stats counts requests. Status 0 stands for a request that got no answer
// (a hang, or a client that gave up during injected latency).
type Stats struct {
	// Requests counts requests by endpoint (EndpointRetrieveIntent, …).
	Requests map[string]int64
	// Responses counts requests by endpoint, then by HTTP status.
	Responses map[string]map[int]int64
	// WrongAccount counts retrieves of an intent that exists, under a
	// Stripe-Account header (or none) other than its own: each was
	// answered 404, and for a reconciler each is a row read as the wrong
	// account.
	WrongAccount int64
}

func newStats() Stats {
	return Stats{Requests: make(map[string]int64), Responses: make(map[string]map[int]int64)}
}

// Total returns the number of requests to every endpoint.
func (st Stats) Total() int64 {
	var n int64
	for _, c := range st.Requests {
		n += c
	}
	return n
}

// Status returns the number of requests, to any endpoint, answered with code.
func (st Stats) Status(code int) int64 {
	var n int64
	for _, m := range st.Responses {
		n += m[code]
	}
	return n
}

func (s *Server) count(endpoint string, status int) {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.stats.Requests[endpoint]++
	m := s.stats.Responses[endpoint]
	if m == nil {
		m = make(map[int]int64)
		s.stats.Responses[endpoint] = m
	}
	m[status]++
}

func (s *Server) countWrongAccount() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.stats.WrongAccount++
}

// Stats returns a copy of the request counters.
func (s *Server) Stats() Stats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	out := Stats{Requests: maps.Clone(s.stats.Requests), Responses: make(map[string]map[int]int64, len(s.stats.Responses)),
		WrongAccount: s.stats.WrongAccount}
	for k, m := range s.stats.Responses {
		out.Responses[k] = maps.Clone(m)
	}
	return out
}

// ResetStats sets every counter to zero.
func (s *Server) ResetStats() {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	s.stats = newStats()
}
