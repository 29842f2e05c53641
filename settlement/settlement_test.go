package settlement_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/stripesim"
)

const day = 24 * time.Hour

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// Each settlement kind is detected by a round, with what was settled in its
// details, and healed by a later round once the drift goes.
func TestEachKindDetectedAndHealed(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	ctx := context.Background()
	old := b.clock.Now().Add(-20 * day)
	ids := b.add(t,
		payment{intent: "pi_ok", status: payrecon.StatusPaid, amount: 1000, observed: payrecon.IntentSucceeded, created: old},
		payment{intent: "pi_pending", status: payrecon.StatusPending, amount: 1200},
		payment{intent: "pi_amount", status: payrecon.StatusPaid, amount: 1100, stripe: 1000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_norow", amount: 900, noRow: true},
		payment{intent: "pi_unsettled", status: payrecon.StatusPaid, amount: 700, observed: payrecon.IntentSucceeded, created: old},
	)
	// A payout before them all: every payout that could hold them is read.
	b.payout(t, stripesim.PayoutSpec{ID: "po_0", Created: old.Add(-day), Fees: []int64{1}})
	b.payout(t, stripesim.PayoutSpec{ID: "po_1", Intents: []string{"pi_ok", "pi_pending", "pi_amount", "pi_norow"}})
	r := b.reconciler(nil)
	rep := round(t, r)
	want := []string{
		"paid_not_settled pi_unsettled",
		"settled_amount_mismatch pi_amount",
		"settled_not_paid_locally pi_norow",
		"settled_not_paid_locally pi_pending",
	}
	if got := keys(b.open(t)); !slices.Equal(got, want) {
		t.Fatalf("open findings %v, want %v", got, want)
	}
	if rep.Read != 2 || rep.Lines != 7 || rep.NewLines != 7 || rep.Requests != 3 || rep.Opened[payrecon.KindSettledNotPaidLocally] != 2 {
		t.Errorf("report %+v", rep)
	}
	// The details say what was settled, and where.
	fs, err := postgres.NewFindings(b.pool, b.clock).List(ctx, postgres.FindingFilter{Kinds: []payrecon.Kind{payrecon.KindSettledAmountMismatch}})
	if err != nil || len(fs) != 1 {
		t.Fatalf("%v %v", fs, err)
	}
	d := fs[0].Details
	if d == nil || d.Settlement == nil || d.Settlement.PayoutID != "po_1" || d.Settlement.Gross != 1000 ||
		d.Settlement.Fee != stripesim.FeeFor(1000) || d.Settlement.Net != 1000-stripesim.FeeFor(1000) || d.Settlement.Currency != "usd" ||
		d.Settlement.ArrivalDate == nil || d.Amount != 1000 || d.LocalAmount == nil || *d.LocalAmount != 1100 ||
		fs[0].Verdict != payrecon.NeedsReview || *fs[0].PaymentID != ids["pi_amount"] {
		t.Errorf("finding %+v, details %+v", fs[0], d)
	}
	// A second round with nothing changed opens nothing again and reads no
	// payout again.
	rep = round(t, r)
	if len(rep.Opened) != 0 || len(rep.Healed) != 0 || rep.Read != 0 || rep.AlreadyRead != 2 || rep.Requests != 1 {
		t.Errorf("second round %+v", rep)
	}

	// The drifts go: the pending payment is paid (a repair), the amount
	// fixed, the missing row inserted, the unsettled payment paid out.
	pgtest.Exec(t, b.pool, "UPDATE payments SET status = 'paid' WHERE stripe_payment_intent_id = 'pi_pending'")
	pgtest.Exec(t, b.pool, "UPDATE payments SET amount = 1000 WHERE stripe_payment_intent_id = 'pi_amount'")
	pgtest.Exec(t, b.pool, `INSERT INTO payments (order_id, stripe_payment_intent_id, status, amount, currency)
		VALUES ('order_norow', 'pi_norow', 'paid', 900, 'usd')`)
	b.clock.Advance(time.Hour)
	b.payout(t, stripesim.PayoutSpec{ID: "po_2", Intents: []string{"pi_unsettled"}})
	rep = round(t, r)
	if got := b.open(t); len(got) != 0 {
		t.Errorf("still open: %v (%+v)", keys(got), rep)
	}
	res := map[string]string{}
	for _, f := range b.findings(t) {
		res[f.kind+" "+f.intent] = f.resolution
	}
	wantRes := map[string]string{
		"paid_not_settled pi_unsettled":       "healed",
		"settled_amount_mismatch pi_amount":   "healed",
		"settled_not_paid_locally pi_norow":   "local_row_appeared",
		"settled_not_paid_locally pi_pending": "healed",
	}
	if !maps.Equal(res, wantRes) {
		t.Errorf("resolutions %v, want %v", res, wantRes)
	}
	// The line of the row that appeared is matched now.
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_payout_lines WHERE payment_intent_id IS NOT NULL AND payment_id IS NULL"); n != 0 {
		t.Errorf("%d lines still unmatched", n)
	}
}

// A payout read twice, and by two replicas at once, keeps one line per
// balance transaction and opens each finding once.
func TestLinesIdempotentAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	var intents []string
	var ps []payment
	for i := range 250 {
		id := fmt.Sprintf("pi_r%03d", i)
		intents = append(intents, id)
		st := payrecon.StatusPaid
		if i%50 == 0 {
			st = payrecon.StatusPending
		}
		ps = append(ps, payment{intent: id, status: st, amount: 1000, observed: payrecon.IntentSucceeded})
	}
	b.add(t, ps...)
	b.payout(t, stripesim.PayoutSpec{ID: "po_big", Intents: intents[:200], Fees: []int64{10}})
	b.payout(t, stripesim.PayoutSpec{ID: "po_small", Intents: intents[200:]})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each replica has its own reconciler on the same database.
			_, errs[i] = b.reconciler(nil).Round(context.Background())
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	round(t, b.reconciler(nil))
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_payout_lines"); n != 250+1+2 {
		t.Errorf("%d lines, want 253 (250 charges, a fee, two payouts' own)", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'settled_not_paid_locally'"); n != 5 {
		t.Errorf("%d settled_not_paid_locally findings, want 5", n)
	}
	for _, id := range []string{"po_big", "po_small"} {
		p, err := b.store.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !p.LinesRead || len(p.Problems) != 0 || p.Totals.Net != p.Amount || p.Matched+p.Unmatched != p.Totals.Lines-boolInt(id == "po_big") {
			t.Errorf("%s: %+v", id, p)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A payout whose lines do not add up, and one that failed after it was
// paid, are flagged; a status change makes its lines be read again, a
// manual payout is listed with its total and never itemised, and one whose
// reconciliation is in progress waits for it.
func TestPayoutOwnCheck(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	ctx := context.Background()
	b.add(t, payment{intent: "pi_a", status: payrecon.StatusPaid, amount: 1000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_b", status: payrecon.StatusPaid, amount: 2000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_c", status: payrecon.StatusPaid, amount: 3000, observed: payrecon.IntentSucceeded})
	b.payout(t, stripesim.PayoutSpec{ID: "po_off", Intents: []string{"pi_a"}, AmountDelta: 1})
	b.payout(t, stripesim.PayoutSpec{ID: "po_fails", Intents: []string{"pi_b"}})
	b.payout(t, stripesim.PayoutSpec{ID: "po_manual", Manual: true, Amount: 4321})
	b.payout(t, stripesim.PayoutSpec{ID: "po_wait", Intents: []string{"pi_c"}, InProgress: true})
	r := b.reconciler(nil)
	rep := round(t, r)
	if rep.Payouts != 4 || rep.Manual != 1 || rep.NotReconciled != 1 || rep.Read != 2 {
		t.Errorf("round %+v", rep)
	}
	problems := func(id string) []payrecon.PayoutProblem {
		t.Helper()
		p, err := b.store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return p.Problems
	}
	if got := problems("po_off"); !slices.Equal(got, []payrecon.PayoutProblem{payrecon.ProblemLinesDoNotAddUp}) {
		t.Errorf("po_off: %v", got)
	}
	if got := problems("po_fails"); len(got) != 0 {
		t.Errorf("po_fails, paid: %v", got)
	}
	man, err := b.store.Get(ctx, "po_manual")
	if err != nil || man.Note != payrecon.ManualPayoutNote || man.Amount != 4321 || man.LinesRead || len(man.Problems) != 0 {
		t.Errorf("manual %+v %v", man, err)
	}
	if w, _ := b.store.Get(ctx, "po_wait"); w.LinesRead || w.Note == "" {
		t.Errorf("in progress %+v", w)
	}

	// The bank returns po_fails; the event's read sees it failed.
	if _, err := b.sim.SetPayoutStatus("po_fails", payrecon.PayoutFailed); err != nil {
		t.Fatal(err)
	}
	rep, err = r.ReadPayout(ctx, "", "po_fails")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Read != 1 || rep.Requests != 2 {
		t.Errorf("a payout whose status changed is read again: %+v", rep)
	}
	if got := problems("po_fails"); !slices.Equal(got, []payrecon.PayoutProblem{payrecon.ProblemFailedAfterPaid}) {
		t.Errorf("po_fails, failed: %v", got)
	}
	// Its reconciliation completes; the next round reads it.
	if _, err := b.sim.CompletePayoutReconciliation("po_wait"); err != nil {
		t.Fatal(err)
	}
	if rep := round(t, r); rep.Read != 1 || rep.Lines != 2 {
		t.Errorf("after reconciliation completed: %+v", rep)
	}
	if _, err := r.ReadPayout(ctx, "", "po_nope"); !errors.Is(err, payrecon.ErrNotFound) {
		t.Errorf("an unknown payout: %v", err)
	}
}

// paid_not_settled waits --settle-after from the payment, and for a later
// payout read, on a settable clock; it is judged only for payments no
// older than the first payout read.
func TestPaidNotSettledOnASettableClock(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	b.add(t, payment{intent: "pi_first", status: payrecon.StatusPaid, amount: 500, observed: payrecon.IntentSucceeded})
	// Before the first payout: not judged (an earlier payout, not read,
	// may hold it).
	b.add(t, payment{intent: "pi_before", status: payrecon.StatusPaid, amount: 500, observed: payrecon.IntentSucceeded,
		created: b.clock.Now().Add(-2 * day)})
	b.payout(t, stripesim.PayoutSpec{ID: "po_0", Intents: []string{"pi_first"}})
	b.clock.Advance(time.Minute)
	b.add(t, payment{intent: "pi_lost", status: payrecon.StatusPaid, amount: 500, observed: payrecon.IntentSucceeded, created: b.clock.Now()},
		payment{intent: "pi_unverified", status: payrecon.StatusPaid, amount: 500, created: b.clock.Now()})
	r := b.reconciler(nil)
	b.clock.Advance(13 * day)
	b.payout(t, stripesim.PayoutSpec{ID: "po_13", Fees: []int64{1}})
	round(t, r)
	if got := b.open(t); len(got) != 0 {
		t.Fatalf("13 days: %v", keys(got))
	}
	// 15 days, but no payout since the 14th day: Stripe has not paid out.
	b.clock.Advance(2 * day)
	round(t, r)
	if got := b.open(t); len(got) != 0 {
		t.Fatalf("15 days, no later payout: %v", keys(got))
	}
	b.payout(t, stripesim.PayoutSpec{ID: "po_15", Fees: []int64{1}})
	round(t, r)
	if got := keys(b.open(t)); !slices.Equal(got, []string{"paid_not_settled pi_lost"}) {
		t.Fatalf("15 days and a later payout: %v", got)
	}
	// Off with --settle-after 0: not judged, the open finding left alone.
	off := b.reconciler(func(c *settlement.Config) { c.Checks.SettleAfter = 0 })
	round(t, off)
	if len(b.open(t)) != 1 {
		t.Errorf("settle-after off touched the finding")
	}
	// Ignored: never opened again once healed by hand... and a kind
	// ignored is not judged either.
	ign := b.reconciler(func(c *settlement.Config) {
		c.Checks.Ignore = map[payrecon.Kind]bool{payrecon.KindPaidNotSettled: true}
	})
	if rep := round(t, ign); len(rep.Healed) != 0 || len(rep.Opened) != 0 {
		t.Errorf("ignored kind judged: %+v", rep)
	}
}

// Refunds and disputes are netted in the payout: its totals split gross,
// refunds, disputes and fees, its net is its amount, and a charge refunded
// in full on an order marked failed kept no money.
func TestRefundsAndDisputesNetted(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	b.add(t,
		payment{intent: "pi_paid", status: payrecon.StatusPaid, amount: 10000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_part", status: payrecon.StatusPaid, amount: 5000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_disp", status: payrecon.StatusPaid, amount: 4000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_back", status: payrecon.StatusFailed, amount: 3000, observed: payrecon.IntentSucceeded},
		payment{intent: "pi_keep", status: payrecon.StatusFailed, amount: 2000, observed: payrecon.IntentSucceeded},
	)
	for _, x := range []struct {
		id     string
		amount int64
	}{{"pi_part", 1500}, {"pi_back", 0}} {
		if _, err := b.sim.Refund(x.id, x.amount); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.sim.Dispute("pi_disp"); err != nil {
		t.Fatal(err)
	}
	po := b.payout(t, stripesim.PayoutSpec{ID: "po_net", Intents: []string{"pi_paid", "pi_part", "pi_disp", "pi_back", "pi_keep"}, Fees: []int64{25}})
	round(t, b.reconciler(nil))
	p, err := b.store.Get(context.Background(), "po_net")
	if err != nil {
		t.Fatal(err)
	}
	fees := -(stripesim.FeeFor(10000) + stripesim.FeeFor(5000) + stripesim.FeeFor(4000) + stripesim.FeeFor(3000) + stripesim.FeeFor(2000) + stripesim.DisputeFee + 25)
	want := payrecon.PayoutTotals{Lines: 5 + 2 + 1 + 1, Gross: 24000, Refunds: -1500 - 3000, Disputes: -4000, Fees: fees, Other: 0, Net: po.Amount}
	if p.Totals != want || len(p.Problems) != 0 {
		t.Errorf("totals %+v, want %+v (problems %v)", p.Totals, want, p.Problems)
	}
	if got := keys(b.open(t)); !slices.Equal(got, []string{"settled_not_paid_locally pi_keep"}) {
		t.Errorf("open %v: only the failed order whose money was kept", got)
	}
}

// A key without Balance: Read fails the round with a configuration error
// naming the permission, and records no payout as read.
func TestWithoutBalanceRead(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{MissingPermissions: []string{stripesim.PermissionBalanceRead}})
	b.add(t, payment{intent: "pi_x", status: payrecon.StatusPaid, amount: 1000, observed: payrecon.IntentSucceeded})
	b.payout(t, stripesim.PayoutSpec{Intents: []string{"pi_x"}})
	_, err := b.reconciler(nil).RunOnce(context.Background())
	var ce *payrecon.ConfigError
	if !errors.As(err, &ce) || ce.StatusCode != 403 {
		t.Fatalf("round: %v", err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_payouts WHERE lines_read_at IS NOT NULL"); n != 0 {
		t.Errorf("%d payouts marked read", n)
	}
}

// Requests: one list page per 100 payouts and one per 100 lines of each.
func TestRequestsPerLine(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	var ps []payment
	for i := range 300 {
		ps = append(ps, payment{intent: fmt.Sprintf("pi_q%03d", i), status: payrecon.StatusPaid, amount: 1000, observed: payrecon.IntentSucceeded})
	}
	b.add(t, ps...)
	for i := range 3 {
		var ids []string
		for j := range 99 {
			ids = append(ids, ps[i*100+j].intent)
		}
		b.payout(t, stripesim.PayoutSpec{Intents: ids})
	}
	b.sim.ResetStats()
	rep := round(t, b.reconciler(func(c *settlement.Config) { c.Concurrency = 2 }))
	if rep.Lines != 300 || rep.Requests != 4 || b.sim.Stats().Total() != 4 {
		t.Errorf("%d lines in %d requests (simulator counted %d), want 300 in 4", rep.Lines, rep.Requests, b.sim.Stats().Total())
	}
}

// With the connected-account column, a connected account's paid payment is
// never paid_not_settled by the platform's payouts: its charges are paid
// out in its own account's payouts.
func TestPaidNotSettledOnlyForTheAccountsRows(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	ctx := context.Background()
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	acct, err := postgres.DetectAccountColumn(ctx, b.pool, postgres.AccountColumnDefault)
	if err != nil || !acct.Found {
		t.Fatalf("%+v %v", acct, err)
	}
	b.store = b.store.WithAccountColumn(acct)
	b.payout(t, stripesim.PayoutSpec{ID: "po_first", Created: b.clock.Now().Add(-30 * day), Fees: []int64{1}})
	old := b.clock.Now().Add(-20 * day)
	b.add(t, payment{intent: "pi_platform", status: payrecon.StatusPaid, amount: 100, observed: payrecon.IntentSucceeded, created: old},
		payment{intent: "pi_connected", status: payrecon.StatusPaid, amount: 100, observed: payrecon.IntentSucceeded, created: old})
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_account_id = 'acct_other' WHERE stripe_payment_intent_id = 'pi_connected'")
	b.payout(t, stripesim.PayoutSpec{ID: "po_later", Fees: []int64{1}})
	round(t, b.reconciler(nil))
	if got := keys(b.open(t)); !slices.Equal(got, []string{"paid_not_settled pi_platform"}) {
		t.Errorf("open %v", got)
	}
}

// A session row's charge settled in a payout is its own (matched through
// the PaymentIntent its Checkout Session named, payrecon_session_intents),
// never settled_not_paid_locally; a settled amount that is not the order's
// is settled_amount_mismatch on the session row.
func TestSessionRowsSettle(t *testing.T) {
	t.Parallel()
	b := setup(t, stripesim.Faults{})
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text")
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	b.add(t, payment{intent: "pi_of_cs_ok", amount: 1000, noRow: true}, payment{intent: "pi_of_cs_short", amount: 900, noRow: true})
	rows := map[string]int64{}
	for _, p := range []struct {
		session, intent string
		amount          int64
	}{{"cs_ok", "pi_of_cs_ok", 1000}, {"cs_short", "pi_of_cs_short", 1000}} {
		var id int64
		if err := b.pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_checkout_session_id, status, created_at, updated_at, amount, currency, observed_external_status)
			VALUES ('order_' || $1, $1, 'paid', now() - interval '1 hour', now() - interval '1 hour', $2, 'usd', 'succeeded') RETURNING id`, p.session, p.amount).Scan(&id); err != nil {
			t.Fatal(err)
		}
		rows[p.session] = id
		// As the sweep (or the session's event) records it.
		pgtest.Exec(t, b.pool, "INSERT INTO payrecon_session_intents (intent_id, payment_id, session_id, seen_at) VALUES ($1, $2, $3, now())", p.intent, id, p.session)
	}
	b.payout(t, stripesim.PayoutSpec{ID: "po_sessions", Intents: []string{"pi_of_cs_ok", "pi_of_cs_short"}})
	round(t, b.reconciler(nil))
	if got, want := keys(b.open(t)), []string{"settled_amount_mismatch pi_of_cs_short"}; !slices.Equal(got, want) {
		t.Fatalf("open findings %v, want %v", got, want)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_payout_lines WHERE payment_intent_id LIKE 'pi_of_cs_%' AND payment_id IS NULL"); n != 0 {
		t.Errorf("%d lines of session rows' charges left unmatched", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'settled_amount_mismatch' AND payment_id = $1", rows["cs_short"]); n != 1 {
		t.Errorf("the mismatch is not the session row's")
	}
}
