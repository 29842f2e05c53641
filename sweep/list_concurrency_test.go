package sweep_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// countingGateway counts the requests in flight at once through a gateway.
type countingGateway struct {
	payrecon.Gateway
	now, peak, lists, retrieves atomic.Int64
	mu                          sync.Mutex
	listPeak                    int64
	listsNow                    int64
}

func (g *countingGateway) enter(list bool) func() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	if list {
		g.mu.Lock()
		g.listsNow++
		g.listPeak = max(g.listPeak, g.listsNow)
		g.mu.Unlock()
	}
	return func() {
		g.now.Add(-1)
		if list {
			g.mu.Lock()
			g.listsNow--
			g.mu.Unlock()
		}
	}
}

func (g *countingGateway) ListIntents(ctx context.Context, q payrecon.ListQuery) (payrecon.IntentPage, error) {
	defer g.enter(true)()
	g.lists.Add(1)
	return g.Gateway.ListIntents(ctx, q)
}

func (g *countingGateway) RetrieveIntent(ctx context.Context, id string) (payrecon.Intent, error) {
	defer g.enter(false)()
	g.retrieves.Add(1)
	return g.Gateway.RetrieveIntent(ctx, id)
}

// List mode keeps several list requests in flight (a batch's window cut
// into spans listed at once, and the next batches' windows listed ahead
// while each batch commits), never more Stripe requests at once than
// Config.Concurrency, and loses no guarantee: every row is verified (those
// the listing missed retrieved one by one), the intent with no local row is
// found, and the cursor walks every row once.
func TestListModeKeepsRequestsInFlightWithinConcurrency(t *testing.T) {
	t.Parallel()
	const n = 2000
	rows := simpleRows(n, func(i int) (payrecon.LocalStatus, payrecon.StripeStatus) {
		if i == 700 {
			return payrecon.StatusPending, payrecon.IntentSucceeded // a missed webhook
		}
		return payrecon.StatusPaid, payrecon.IntentSucceeded
	})
	// One row's intent is listed under another creation time, far from its
	// row's window: it must still be verified, by id.
	rows[1200].stripeCreat = rows[1200].stripeCreat.Add(-30 * 24 * time.Hour)
	orphan := stripesim.Intent{ID: "pi_orphan", Status: payrecon.IntentSucceeded, Created: rows[1500].localCreated}
	b := setupSim(t, rows, []stripesim.Intent{orphan}, stripesim.Faults{Latency: 20 * time.Millisecond})
	gw := &countingGateway{Gateway: b.gw}
	const concurrency = 4
	s := mustNew(b.store, gw, sweep.Config{Batch: 100, Concurrency: concurrency, Mode: sweep.ModeList,
		SleepFunc: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
	rep, err := s.RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scanned != n || rep.Verified != n {
		t.Errorf("scanned %d, verified %d of %d rows", rep.Scanned, rep.Verified, n)
	}
	if got := gw.retrieves.Load(); got != 1 {
		t.Errorf("%d retrieves, want 1 (the row whose intent was listed elsewhere)", got)
	}
	if p := gw.peak.Load(); p > concurrency {
		t.Errorf("%d Stripe requests in flight at once, want at most %d", p, concurrency)
	}
	if gw.listPeak < 2 {
		t.Errorf("at most %d list request in flight: listing waits on Stripe's latency one request at a time", gw.listPeak)
	}
	if calls := int64(rep.StripeCalls); calls != gw.lists.Load()+gw.retrieves.Load() {
		t.Errorf("the report counts %d Stripe requests, the gateway saw %d", calls, gw.lists.Load()+gw.retrieves.Load())
	}
	if got := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND stripe_payment_intent_id = 'pi_orphan'", payrecon.KindMissingLocally); got != 1 {
		t.Errorf("%d missing_locally findings for the orphan intent, want 1", got)
	}
	if got := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1", payrecon.KindMissedSuccess); got != 1 {
		t.Errorf("%d missed_success findings, want 1", got)
	}
	if got := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); got != 0 {
		t.Errorf("%d rows never verified", got)
	}
}
