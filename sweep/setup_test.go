package sweep_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// fakeGateway stands in for Stripe behind the Gateway interface (the one
// place fakes are allowed): intents by id, per-id errors, a hook run inside
// every call, and call counting.
type fakeGateway struct {
	mu       sync.Mutex
	status   map[string]payrecon.StripeStatus
	errs     map[string]error
	errAll   error
	hook     func(ctx context.Context, id string)
	calls    atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{status: map[string]payrecon.StripeStatus{}, errs: map[string]error{}}
}

func (g *fakeGateway) set(id string, s payrecon.StripeStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.status[id] = s
}

func (g *fakeGateway) fail(id string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		delete(g.errs, id)
		return
	}
	g.errs[id] = err
}

func (g *fakeGateway) failAll(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.errAll = err
}

func (g *fakeGateway) RetrieveIntent(ctx context.Context, id string) (payrecon.Intent, error) {
	g.calls.Add(1)
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxIn.Load()
		if n <= m || g.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	g.mu.Lock()
	hook := g.hook
	g.mu.Unlock()
	if hook != nil {
		hook(ctx, id)
	}
	if err := ctx.Err(); err != nil {
		return payrecon.Intent{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.errAll != nil {
		return payrecon.Intent{}, g.errAll
	}
	if err, ok := g.errs[id]; ok {
		return payrecon.Intent{}, err
	}
	s, ok := g.status[id]
	if !ok {
		return payrecon.Intent{}, fmt.Errorf("retrieve %s: %w", id, payrecon.ErrNotFound)
	}
	return payrecon.Intent{ID: id, Status: s}, nil
}

func (g *fakeGateway) ListIntents(ctx context.Context, q payrecon.ListQuery) (payrecon.IntentPage, error) {
	return payrecon.IntentPage{}, fmt.Errorf("list: %w", payrecon.ErrUnavailable)
}

type testBundle struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	gw    *fakeGateway
	ids   []int64
}

// row describes one payment and what Stripe says about it; stripe "" means
// the intent does not exist in Stripe.
type row struct {
	local  payrecon.LocalStatus
	stripe payrecon.StripeStatus
}

func setup(t *testing.T, rows []row) *testBundle {
	t.Helper()
	pool := pgtest.NewDB(t)
	b := &testBundle{pool: pool, store: postgres.NewStore(pool), gw: newFakeGateway()}
	old := time.Now().Add(-time.Hour) // outside the grace window
	ps := make([]pgtest.Payment, len(rows))
	for i, r := range rows {
		id := fmt.Sprintf("pi_%05d", i+1)
		ps[i] = pgtest.Payment{IntentID: id, Status: r.local, CreatedAt: old}
		if r.stripe != "" {
			b.gw.set(id, r.stripe)
		}
	}
	if len(ps) > 0 {
		b.ids = pgtest.InsertPayments(t, pool, ps)
	}
	return b
}

// uniform builds n rows that are all in sync (paid / succeeded).
func uniform(n int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i] = row{payrecon.StatusPaid, payrecon.IntentSucceeded}
	}
	return rows
}

// sweeper builds a sweeper on the fake gateway, in retrieve mode unless
// cfg says otherwise (the fake cannot list; list mode is tested against the
// simulator).
func (b *testBundle) sweeper(cfg sweep.Config) *sweep.Sweeper {
	if cfg.Mode == "" {
		cfg.Mode = sweep.ModeRetrieve
	}
	if cfg.SleepFunc == nil {
		cfg.SleepFunc = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	}
	return mustNew(b.store, b.gw, cfg)
}

func (b *testBundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	return pgtest.Count(t, b.pool, sql, args...)
}

func (b *testBundle) cursor(t *testing.T, job string) int64 {
	t.Helper()
	return int64(b.count(t, "SELECT coalesce((SELECT last_id FROM reconciliation_cursor WHERE job = $1), -1)", job))
}
