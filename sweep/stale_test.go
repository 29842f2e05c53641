package sweep_test

import (
	"context"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// staleGateway answers each retrieve with what Stripe said when the request
// arrived, after running during (once): a slow response, during which the
// world moves on.
type staleGateway struct {
	*fakeGateway
	during func()
}

func (g *staleGateway) RetrieveIntent(ctx context.Context, id string) (payrecon.Intent, error) {
	in, err := g.fakeGateway.RetrieveIntent(ctx, id)
	if d := g.during; d != nil {
		g.during = nil
		d()
	}
	return in, err
}

// Issue 23, defect 1 (b, c): job a reads Stripe, and while its answer is on
// the way Stripe moves on and job b reads the fresh answer and opens a
// finding (and, for missed_success, queues its repair). a's older answer,
// committed last, must neither close b's finding nor write its older status
// over b's into observed_external_status or last_reconciled_at.
func TestAnOlderAnswerNeverClosesAFresherFinding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		local     payrecon.LocalStatus
		old, new  payrecon.StripeStatus
		kind      payrecon.Kind
		repairing bool
	}{
		{payrecon.StatusPending, payrecon.IntentRequiresPaymentMethod, payrecon.IntentSucceeded, payrecon.KindMissedSuccess, true},
		{payrecon.StatusFailed, payrecon.IntentRequiresPaymentMethod, payrecon.IntentSucceeded, payrecon.KindFailedLocallyPaidExternally, false},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, []row{{tc.local, tc.old}})
			var freshAt time.Time
			stale := &staleGateway{fakeGateway: b.gw, during: func() {
				b.gw.set("pi_00001", tc.new)
				rep, err := b.sweeper(sweep.Config{Job: "b"}).RunBatch(ctx)
				if err != nil || rep.NewFindings != 1 {
					t.Errorf("job b: %+v, %v; want its finding", rep, err)
				}
				if err := b.pool.QueryRow(ctx, "SELECT last_reconciled_at FROM payments").Scan(&freshAt); err != nil {
					t.Error(err)
				}
			}}
			a := mustNew(b.store, stale, sweep.Config{Job: "a", Mode: sweep.ModeRetrieve})
			rep, err := a.RunBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Resolved != 0 || rep.Verified != 0 {
				t.Errorf("job a's older answer: %+v; want nothing resolved or verified", rep)
			}
			if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND resolved_at IS NULL", tc.kind); n != 1 {
				t.Fatalf("%d open %s findings after the older answer, want 1 (closed while the drift stands)", n, tc.kind)
			}
			var observed string
			var at time.Time
			if err := b.pool.QueryRow(ctx, "SELECT observed_external_status, last_reconciled_at FROM payments").Scan(&observed, &at); err != nil {
				t.Fatal(err)
			}
			if observed != string(tc.new) || !at.Equal(freshAt) {
				t.Errorf("payments says Stripe said %s at %s; want the fresher %s at %s", observed, at, tc.new, freshAt)
			}
			if tc.repairing {
				if n := b.count(t, "SELECT count(*) FROM outbox o JOIN reconciliation_findings f ON f.id = (o.payload->>'finding_id')::bigint WHERE f.resolved_at IS NULL"); n != 1 {
					t.Errorf("%d repair commands with an open finding, want 1: the relay would skip it", n)
				}
			}
			// The next sweep, reading fresh, keeps it open (the drift stands).
			if _, err := b.sweeper(sweep.Config{Job: "a"}).RunBatch(ctx); err != nil {
				t.Fatal(err)
			}
			if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = $1 AND resolved_at IS NULL", tc.kind); n != 1 {
				t.Fatalf("%d open %s findings after a fresh sweep, want 1", n, tc.kind)
			}
		})
	}
}

// Issue 23, defect 1 (a): a list-mode batch served from a listing read
// before a dispute must not heal the disputed finding the events road opened
// meanwhile.
func TestListingReadBeforeADisputeDoesNotHealIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSim(t, simpleRows(4, nil), nil, stripesim.Faults{})
	s := b.sweeper(sweep.Config{Batch: 2, Mode: sweep.ModeList})
	if rep, err := s.RunBatch(ctx); err != nil || rep.StripeCalls != 1 {
		t.Fatalf("first batch: %+v, %v; want one list request", rep, err)
	}
	evID, err := b.sim.Dispute("pi_sim_000002")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.sim.EventPayload(evID)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := payrecon.ParseEvent(raw)
	if err != nil {
		t.Fatal(err)
	}
	res, err := postgres.NewEvents(b.pool, postgres.NewWriter(nil), nil).ProcessEvent(ctx, ev)
	if err != nil || res.FindingID == 0 {
		t.Fatalf("the dispute event: %+v, %v; want a disputed finding", res, err)
	}
	rep, err := s.RunBatch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Rows 2 and 3 were in the first batch's listing (their creation times
	// are within its window): they are served from it, and at most the
	// window's new edge is listed.
	if rep.StripeCalls > 1 {
		t.Fatalf("second batch made %d requests: it was meant to be served from the cached listing", rep.StripeCalls)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'disputed' AND resolved_at IS NULL"); n != 1 {
		t.Fatalf("%d open disputed findings after a batch served from a listing older than the dispute, want 1", n)
	}
	// A fresh read confirms it.
	if _, err := b.sweeper(sweep.Config{Batch: 2, Mode: sweep.ModeRetrieve, Job: "fresh"}).RunCycle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'disputed' AND resolved_at IS NULL"); n != 1 {
		t.Fatalf("%d open disputed findings after a fresh sweep, want 1", n)
	}
}

// Issue 23, defect 4: a row edited while its Stripe call is in flight (its
// amount, with updated_at; or its PaymentIntent) is not marked verified: it
// was judged with the old values. It is rechecked after the grace window.
func TestRowEditedDuringItsCallIsNotVerified(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]string{
		"updated_at": "UPDATE payments SET updated_at = now() - interval '2 hours'",
		"intent":     "UPDATE payments SET stripe_payment_intent_id = 'pi_new'",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t, []row{{payrecon.StatusPaid, payrecon.IntentSucceeded}})
			b.gw.hook = func(context.Context, string) { pgtest.Exec(t, b.pool, edit) }
			rep, err := b.sweeper(sweep.Config{}).RunBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Verified != 0 {
				t.Errorf("verified %d rows edited during their call, want 0", rep.Verified)
			}
			if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
				t.Errorf("the edited row is marked verified")
			}
			if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck WHERE reason = $1", payrecon.RecheckChanged); n != 1 {
				t.Errorf("the edited row is not queued for a recheck")
			}
		})
	}
}
