package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

// SettlementReport is the settlement phase: the payouts Stripe made of the
// succeeded charges, the payouts check's round over them, and the payouts
// flagged by their own check.
type SettlementReport struct {
	// Payouts counts the payouts made (Manual of them by hand); Lines the
	// balance transactions the check read, in Requests requests.
	Payouts  int `json:"payouts"`
	Manual   int `json:"manual"`
	Lines    int `json:"lines"`
	Requests int `json:"stripe_requests"`
	// Duration is the round's (the reads, the writes and the judgment);
	// LinesPerSecond follows from it.
	Duration       time.Duration `json:"duration_ns"`
	LinesPerSecond float64       `json:"lines_per_second"`
	// SettleAfter is the demo's --settle-after.
	SettleAfter time.Duration `json:"settle_after_ns"`
	// FlaggedInjected counts the payouts made wrong (one whose amount is
	// not what its lines add up to, one that fails after it was paid);
	// Flagged those the check flagged, FlaggedRight those flagged with the
	// right problem.
	FlaggedInjected int      `json:"flagged_injected"`
	Flagged         int      `json:"flagged"`
	FlaggedRight    int      `json:"flagged_right"`
	Samples         []string `json:"samples,omitempty"`
}

func (s SettlementReport) problems() []string {
	if s.Payouts == 0 || s.Flagged != s.FlaggedInjected || s.FlaggedRight != s.FlaggedInjected {
		return []string{fmt.Sprintf("payouts: %d of %d made wrong flagged (%d with the right problem), %d flagged in all",
			s.FlaggedRight, s.FlaggedInjected, s.FlaggedRight, s.Flagged)}
	}
	return nil
}

// settle is the settlement phase, once the service has stopped (every
// repair applied): the simulator pays the succeeded charges out in an
// automatic payout every payoutEvery of the rows' span (the unsettled rows
// left out; one payout's amount off by one; a fee line each), plus a
// manual payout; the payouts check (`run`'s periodic round) reads and
// judges them; then one payout fails, and its read (what its payout.failed
// event triggers) flags it.
func (r *runner) settle(ctx context.Context) error {
	p := r.plan
	sr := &r.rep.Settlement
	sr.SettleAfter = p.settleAfter()
	now := time.Now().Truncate(time.Second)
	bounds := make([]time.Time, payoutsPerSpan)
	for k := range bounds {
		bounds[k] = p.start.Add(time.Duration(k+1) * p.payoutEvery())
	}
	bounds[len(bounds)-1] = now
	intents := make([][]string, len(bounds))
	add := func(id string, created time.Time) {
		in, ok := r.sim.Get(id)
		if !ok || in.Status != payrecon.IntentSucceeded {
			return
		}
		k := 0
		for k < len(bounds)-1 && !created.Before(bounds[k]) {
			k++
		}
		intents[k] = append(intents[k], id)
	}
	// A connected account's charges are paid out to it, not in the
	// platform's payouts (see plan.spread).
	for i, pr := range p.rows {
		if !p.unsettled[i] && pr.account == 0 {
			add(pr.intentID, pr.created)
		}
	}
	for _, o := range p.orphans {
		if o.account == 0 {
			add(o.intentID, o.created)
		}
	}
	const offBy, failing = 2, 4 // the payouts made wrong
	ids := make([]string, len(bounds))
	for k, created := range bounds {
		spec := stripesim.PayoutSpec{Created: created, Intents: intents[k], Fees: []int64{25}}
		if k == offBy {
			spec.AmountDelta = 1
		}
		po, err := r.sim.CreatePayout(spec)
		if err != nil {
			return fmt.Errorf("pay out the charges until %s: %w", created.Format(time.RFC3339), err)
		}
		ids[k] = po.ID
	}
	if _, err := r.sim.CreatePayout(stripesim.PayoutSpec{Manual: true, Amount: 50000, Created: now}); err != nil {
		return fmt.Errorf("make a manual payout: %w", err)
	}
	sr.Payouts, sr.Manual, sr.FlaggedInjected = len(bounds)+1, 1, 2

	gw, err := stripeapi.New(stripeapi.Config{SecretKey: r.sim.SecretKey(), APIBase: r.sim.URL()})
	if err != nil {
		return err
	}
	cols, err := postgres.DetectMoneyColumns(ctx, r.pool, "amount", "currency")
	if err != nil {
		return err
	}
	store := postgres.NewPayouts(r.pool).WithMoneyColumns(cols).WithAccountColumn(r.accounts)
	rec := settlement.New(gw, store, settlement.Config{
		Checks: payrecon.SettlementChecks{Amount: cols.Amount, Currency: cols.Currency, SettleAfter: p.settleAfter()},
		Logger: quiet(r.log).With("component", "payouts"),
	})
	r.log.Info("paying the succeeded charges out", "payouts", sr.Payouts, "settle_after", p.settleAfter(), "left_out", len(p.unsettled))
	rep, err := rec.RunOnce(ctx)
	if err != nil {
		return fmt.Errorf("the payouts round: %w", err)
	}
	sr.Lines, sr.Requests, sr.Duration = rep.Lines, rep.Requests, rep.Duration
	if secs := rep.Duration.Seconds(); secs > 0 {
		sr.LinesPerSecond = float64(rep.Lines) / secs
	}
	if _, err := r.sim.SetPayoutStatus(ids[failing], payrecon.PayoutFailed); err != nil {
		return err
	}
	if _, err := rec.ReadPayout(ctx, "", ids[failing]); err != nil {
		return fmt.Errorf("read the failed payout: %w", err)
	}
	want := map[string]payrecon.PayoutProblem{ids[offBy]: payrecon.ProblemLinesDoNotAddUp, ids[failing]: payrecon.ProblemFailedAfterPaid}
	all, err := store.List(ctx, payrecon.PayoutFilter{Limit: 1000})
	if err != nil {
		return err
	}
	for _, po := range all {
		if len(po.Problems) == 0 {
			continue
		}
		sr.Flagged++
		if len(po.Problems) == 1 && po.Problems[0] == want[po.ID] {
			sr.FlaggedRight++
		} else {
			sr.Samples = sample(sr.Samples, fmt.Sprintf("payout %s flagged %v, want %q", po.ID, po.Problems, want[po.ID]))
		}
	}
	r.log.Info("payouts read and judged", "summary", rep.Describe(), "flagged", sr.Flagged)
	return nil
}
