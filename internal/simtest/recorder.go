package simtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is one request as a Recorder saw it arrive at Stripe's side.
type Request struct {
	// At is when it arrived, Done when its answer was written.
	At, Done time.Time
	// Account is its Stripe-Account header ("" for the platform's own).
	Account string
	// Via names the front it came through (Recorder.Front): which process
	// sent it.
	Via string
	// Status is the answer's HTTP status.
	Status int
	// Path is the request's path.
	Path string
}

// Recorder stands in front of a simulator (or any Stripe-shaped handler)
// and records every request's arrival, account and answer: budgets are
// measured where Stripe measures them, not where payrecon thinks it spends.
type Recorder struct {
	next http.Handler
	mu   sync.Mutex
	reqs []Request
	// flying are the requests not yet answered.
	flying map[*http.Request]Request
}

// NewRecorder records the requests that next serves.
func NewRecorder(next http.Handler) *Recorder {
	return &Recorder{next: next, flying: map[*http.Request]Request{}}
}

// Front starts an HTTP server in front of the recorder whose requests are
// recorded as coming via name, and returns its URL (a STRIPE_API_BASE);
// it closes when tb ends.
func (r *Recorder) Front(tb testing.TB, name string) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		q := Request{At: time.Now(), Account: req.Header.Get("Stripe-Account"), Via: name, Path: req.URL.Path}
		r.mu.Lock()
		r.flying[req] = q
		r.mu.Unlock()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			q.Done, q.Status = time.Now(), sw.status
			r.mu.Lock()
			delete(r.flying, req)
			r.reqs = append(r.reqs, q)
			r.mu.Unlock()
		}()
		r.next.ServeHTTP(sw, req)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Requests returns the requests recorded so far, in order of arrival,
// that keep says to keep (nil: all).
func (r *Recorder) Requests(keep func(Request) bool) []Request {
	r.mu.Lock()
	out := slices.Clone(r.reqs)
	r.mu.Unlock()
	if keep != nil {
		out = slices.DeleteFunc(out, func(q Request) bool { return !keep(q) })
	}
	slices.SortFunc(out, func(a, b Request) int { return a.At.Compare(b.At) })
	return out
}

// InFlight returns the requests not yet answered that keep says to keep
// (nil: all), in order of arrival; their Done and Status are zero.
func (r *Recorder) InFlight(keep func(Request) bool) []Request {
	r.mu.Lock()
	var out []Request
	for _, q := range r.flying {
		if keep == nil || keep(q) {
			out = append(out, q)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Request) int { return a.At.Compare(b.At) })
	return out
}

// Reset forgets every request recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.reqs = nil
	r.mu.Unlock()
}

// PeakPerSecond returns the most requests of reqs (in order of arrival)
// that arrived within any one second, [t, t+1s), and when that second
// began.
func PeakPerSecond(reqs []Request) (int, time.Time) { return Peak(reqs, time.Second) }

// Peak returns the most requests of reqs (in order of arrival) that
// arrived within any window of length w, [t, t+w), and when it began.
func Peak(reqs []Request, w time.Duration) (int, time.Time) {
	best, at, j := 0, time.Time{}, 0
	for i := range reqs {
		for reqs[i].At.Sub(reqs[j].At) >= w {
			j++
		}
		if n := i - j + 1; n > best {
			best, at = n, reqs[j].At
		}
	}
	return best, at
}

// Rate returns the mean rate of reqs (in order of arrival) between the
// first's arrival and the last's, in requests per second; 0 for fewer than
// two.
func Rate(reqs []Request) float64 {
	if len(reqs) < 2 {
		return 0
	}
	d := reqs[len(reqs)-1].At.Sub(reqs[0].At).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(len(reqs)-1) / d
}

// ByAccount groups reqs by their Stripe-Account, keeping their order.
func ByAccount(reqs []Request) map[string][]Request {
	out := map[string][]Request{}
	for _, q := range reqs {
		out[q.Account] = append(out[q.Account], q)
	}
	return out
}

// Overlaps returns, for one account's requests, the pairs that came via two
// fronts and were in flight at the same time: one account read by two
// processes at once. Each is described as "via a at t / via b at u".
func Overlaps(reqs []Request) []string {
	var out []string
	for i, a := range reqs {
		for _, b := range reqs[i+1:] {
			if !b.At.Before(a.Done) {
				break // reqs are in order of arrival, and a is done before b arrives
			}
			if a.Via != b.Via {
				out = append(out, strings.Join([]string{"via " + a.Via + " at " + a.At.Format("15:04:05.000"),
					"via " + b.Via + " at " + b.At.Format("15:04:05.000")}, " / "))
			}
		}
	}
	return out
}
