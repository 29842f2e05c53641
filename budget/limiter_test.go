package budget_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/payrecon/payrecon/budget"
)

// A 429 halves the rate, down to a floor; an unlimited budget (rps ≤ 0)
// backs off too, from Stripe's live limit, instead of ignoring it.
func TestOnRateLimitedSlowsEvenAnUnlimitedBudget(t *testing.T) {
	t.Parallel()
	l := budget.NewLimiter(0)
	if l.Limit() < math.MaxFloat64 { // rate.Inf
		t.Fatalf("unlimited limiter at %v", l.Limit())
	}
	l.OnRateLimited(0)
	if got := l.Limit(); got != 50 {
		t.Fatalf("after a 429: %v requests/s, want 50 (half of Stripe's live 100)", got)
	}
	for range 20 {
		l.OnRateLimited(0)
	}
	if got := l.Limit(); got != 0.5 {
		t.Fatalf("after many 429s: %v requests/s, want the floor 0.5", got)
	}
	b := budget.NewLimiter(40)
	for range 20 {
		b.OnRateLimited(0)
	}
	if got := b.Limit(); got != 2 {
		t.Fatalf("a budget of 40 after many 429s: %v, want its floor 2 (5 %%)", got)
	}
}

// A 429 for one account's budget slows that account only: not the
// platform budget it spends within, nor another account's.
func TestRateLimitedAccountDoesNotSlowItsParent(t *testing.T) {
	t.Parallel()
	platform := budget.NewLimiter(50)
	a := budget.NewLimiter(10).Within(platform)
	b := budget.NewLimiter(10).Within(platform)
	a.OnRateLimited(0)
	if a.Limit() != 5 || b.Limit() != 10 || platform.Limit() != 50 {
		t.Fatalf("after acct A's 429: A %v, B %v, platform %v; want 5, 10, 50", a.Limit(), b.Limit(), platform.Limit())
	}
}

// Hold stops every caller until it is released; released early, the
// waiting callers go at once rather than at the hold's end.
func TestHoldReleasedEarly(t *testing.T) {
	t.Parallel()
	l := budget.NewLimiter(0)
	l.Hold(time.Now().Add(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); err == nil {
		t.Fatal("a held limiter let a caller through")
	}
	done := make(chan error, 1)
	go func() { done <- l.Wait(context.Background()) }()
	start := time.Now()
	l.Hold(time.Time{})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller still waits after the hold was released")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("released after %s", d)
	}
}

// WithRetries carries a budget for a gateway's retries.
func TestWithRetries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if budget.ForRetries(ctx) != nil || budget.ForRetries(budget.WithRetries(ctx, nil)) != nil {
		t.Fatal("a budget out of nowhere")
	}
	l := budget.NewLimiter(3)
	if budget.ForRetries(budget.WithRetries(ctx, l)) != l {
		t.Fatal("ForRetries lost the budget")
	}
}
