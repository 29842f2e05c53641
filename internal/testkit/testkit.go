// Package testkit holds the small helpers several packages' tests share: a
// clock that moves only when told, and a poll with a deadline (tests wait
// on conditions, never on sleeps).
package testkit

import (
	"sync"
	"testing"
	"time"
)

// Clock is a payrecon.Clock that moves only when told. Safe for concurrent
// use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// WaitFor polls cond every 5 ms until it holds, and fails the test with
// what it waited for when timeout passes first.
func WaitFor(tb testing.TB, what string, timeout time.Duration, cond func() bool) {
	tb.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			tb.Fatalf("timed out after %s waiting for %s", timeout, what)
		case <-tick.C:
		}
	}
}
