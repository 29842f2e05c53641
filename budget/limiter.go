// Package budget is payrecon's Stripe rate budget: an adaptive token
// bucket shared by every concurrent call of a process, backing off on 429
// and recovering while calls succeed; an account's budget spends within
// the platform's (Within). It is a leaf: the sweep, the catch-up, the
// payouts reader and the platform's accounts all draw on it.
package budget

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Limiter is a Stripe rate budget: one token bucket shared by every
// concurrent call. It backs off multiplicatively when Stripe answers 429
// (and pauses everyone for Retry-After), and recovers additively while calls
// succeed, never above the configured budget.
type Limiter struct {
	mu          sync.Mutex
	lim         *rate.Limiter
	max         rate.Limit
	min         rate.Limit
	pausedUntil time.Time
	// heldUntil is Hold's: unlike a Retry-After pause it can be shortened.
	heldUntil time.Time
	successes int
	now       func() time.Time
	// parent, when set, is a budget this one spends within (Within).
	parent *Limiter
}

// NewLimiter returns a limiter at rps requests per second; rps ≤ 0 means no
// limit.
func NewLimiter(rps float64) *Limiter {
	max := rate.Limit(rps)
	if rps <= 0 {
		max = rate.Inf
	}
	return &Limiter{lim: rate.NewLimiter(max, 1), max: max, min: floor(max), now: time.Now}
}

// floor is how far 429s may slow a budget of max: 5 % of it, at least 0.5
// requests per second; an unlimited budget backs off to that 0.5 too (5 %
// of +Inf would never slow it).
func floor(max rate.Limit) rate.Limit {
	if max == rate.Inf {
		return 0.5
	}
	return rate.Limit(math.Max(float64(max)/20, 0.5))
}

// Wait blocks until a call may be made, or ctx ends. It first waits out
// every pause and hold of l and of the budgets it spends within, and only
// then takes its tokens: a token taken before a long wait on the parent
// would be spent late, in a burst with the next ones.
func (l *Limiter) Wait(ctx context.Context) error {
	for {
		pause := l.blocked()
		if pause <= 0 {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if err := l.lim.Wait(ctx); err != nil {
		return err
	}
	if l.parent != nil {
		return l.parent.Wait(ctx)
	}
	return nil
}

// blocked returns how long l, or a budget it spends within, is paused
// (Retry-After) or held (Hold): a hold is looked at again soon, since it
// may be released early.
func (l *Limiter) blocked() time.Duration {
	var d time.Duration
	for b := l; b != nil; b = b.parent {
		b.mu.Lock()
		now := b.now()
		pause := b.pausedUntil.Sub(now)
		if held := b.heldUntil.Sub(now); held > 0 {
			pause = max(pause, min(held, holdPoll))
		}
		b.mu.Unlock()
		d = max(d, pause)
	}
	return d
}

// holdPoll is how often a caller held by Hold looks whether the hold was
// released.
const holdPoll = 50 * time.Millisecond

// Hold makes every caller wait until until (the zero time, or any time
// past, releases the callers at once): a replica that has just joined
// others holds its share of the platform budget until they have counted
// it, so that the sum over the replicas never exceeds the budget.
func (l *Limiter) Hold(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heldUntil = until
}

// Within makes every call l allows wait on parent's budget too, and
// returns l: an account's budget (--rps) spent within the platform's
// (--platform-rps). A 429 slows l only (OnRateLimited): one account's
// limit is not the others'.
func (l *Limiter) Within(parent *Limiter) *Limiter {
	l.parent = parent
	return l
}

// SetBudget changes the configured rate (rps ≤ 0: no limit), keeping a
// backed-off rate below the new budget: the platform budget's share of a
// replica follows the number of replicas.
func (l *Limiter) SetBudget(rps float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	max := rate.Limit(rps)
	if rps <= 0 {
		max = rate.Inf
	}
	old := l.max
	if max == old {
		return
	}
	l.max = max
	l.min = floor(max)
	// At the full budget before: follow it. Backed off: stay backed off,
	// but never above the new budget.
	if cur := l.lim.Limit(); cur >= old || cur > max {
		l.lim.SetLimit(max)
	}
}

// OnRateLimited records a 429: the rate halves (down to a floor of 5 % of
// the budget) and, with a Retry-After hint, every caller pauses that long.
func (l *Limiter) OnRateLimited(retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.successes = 0
	cur := l.lim.Limit()
	if cur == rate.Inf {
		cur = 100 // an unlimited sweep that hits 429 starts from Stripe's live limit
	}
	next := cur / 2
	if next < l.min {
		next = l.min
	}
	l.lim.SetLimit(next)
	if retryAfter > 0 {
		if until := l.now().Add(retryAfter); until.After(l.pausedUntil) {
			l.pausedUntil = until
		}
	}
}

// OnSuccess records a successful call: after every few successes the rate
// climbs back by a tenth of the budget.
func (l *Limiter) OnSuccess() {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.lim.Limit()
	if cur >= l.max {
		return
	}
	l.successes++
	if float64(l.successes) < float64(cur)/4+1 {
		return
	}
	l.successes = 0
	step := l.max / 10
	if l.max == rate.Inf {
		step = 10
	}
	next := cur + step
	if next > l.max {
		next = l.max
	}
	l.lim.SetLimit(next)
}

// Limit returns the current rate in requests per second (+Inf when
// unlimited).
func (l *Limiter) Limit() float64 { return float64(l.lim.Limit()) }

// Budget returns the configured rate in requests per second (+Inf when
// unlimited).
func (l *Limiter) Budget() float64 { return float64(l.max) }

// Collectors expose the limiter's current rate and budget.
func Collectors(l *Limiter) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "payrecon_stripe_limiter_rate_per_second", Help: "Current Stripe request rate allowed by the adaptive limiter (lower than the budget after 429s).",
		}, func() float64 { return l.Limit() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "payrecon_stripe_limiter_budget_per_second", Help: "Configured Stripe request budget (--rps).",
		}, func() float64 { return l.Budget() }),
	}
}

// retriesKey carries the budget a call's retries spend.
type retriesKey struct{}

// WithRetries returns ctx carrying l as the budget that retries of the
// calls made with it spend: a retry is a request at Stripe's side like any
// other, so a gateway waits on l before each retry attempt (ForRetries)
// while the caller has waited for the first.
func WithRetries(ctx context.Context, l *Limiter) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, retriesKey{}, l)
}

// ForRetries returns the budget WithRetries put in ctx, or nil.
func ForRetries(ctx context.Context) *Limiter {
	l, _ := ctx.Value(retriesKey{}).(*Limiter)
	return l
}
