package payrecon_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

// Every settlement rule, each way it can go.
func TestClassifySettlement(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	checks := payrecon.SettlementChecks{Amount: true, Currency: true, SettleAfter: 14 * 24 * time.Hour}
	settled := payrecon.Settled{Charges: 1, Gross: 1000, Kept: 1000, Fee: 59, Net: 941, Currency: "usd", PayoutID: "po_1"}
	local := func(status payrecon.LocalStatus, amount int64, currency string, age time.Duration) *payrecon.SettlementLocal {
		return &payrecon.SettlementLocal{PaymentID: 7, Status: status, Amount: &amount, Currency: currency,
			Created: now.Add(-age), Observed: payrecon.IntentSucceeded}
	}
	for _, tc := range []struct {
		name   string
		checks payrecon.SettlementChecks
		in     payrecon.SettlementInput
		want   []payrecon.Kind
		judged []payrecon.Kind
	}{
		{"paid and settled for its amount", checks,
			payrecon.SettlementInput{Local: local("paid", 1000, "usd", 20*24*time.Hour), Settled: settled, LaterPayout: true}, nil,
			payrecon.SettlementKinds},
		{"settled, pending locally", checks,
			payrecon.SettlementInput{Local: local("pending", 1000, "USD", time.Hour), Settled: settled},
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally}, payrecon.SettlementKinds},
		{"settled, failed locally", checks,
			payrecon.SettlementInput{Local: local("failed", 1000, "usd", time.Hour), Settled: settled},
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally}, payrecon.SettlementKinds},
		{"settled, no local row", checks,
			payrecon.SettlementInput{Settled: settled},
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally},
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"settled and refunded in full, failed locally: no money kept", checks,
			payrecon.SettlementInput{Local: local("failed", 1000, "usd", time.Hour),
				Settled: payrecon.Settled{Charges: 1, Gross: 1000, Kept: 0, Currency: "usd", PayoutID: "po_1"}}, nil, payrecon.SettlementKinds},
		{"settled gross differs from the local amount", checks,
			payrecon.SettlementInput{Local: local("paid", 1100, "usd", time.Hour), Settled: settled},
			[]payrecon.Kind{payrecon.KindSettledAmountMismatch}, payrecon.SettlementKinds},
		{"another currency: amounts not compared", checks,
			payrecon.SettlementInput{Local: local("paid", 1100, "eur", time.Hour), Settled: settled}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"converted line: amounts not compared", checks,
			payrecon.SettlementInput{Local: local("paid", 1100, "usd", time.Hour), Settled: func() payrecon.Settled { s := settled; s.Converted = true; return s }()}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"no amount column: amounts not compared", payrecon.SettlementChecks{SettleAfter: checks.SettleAfter},
			payrecon.SettlementInput{Local: local("paid", 1100, "usd", time.Hour), Settled: settled}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"no currency column: amounts compared", payrecon.SettlementChecks{Amount: true, SettleAfter: checks.SettleAfter},
			payrecon.SettlementInput{Local: local("paid", 1100, "", time.Hour), Settled: settled},
			[]payrecon.Kind{payrecon.KindSettledAmountMismatch}, payrecon.SettlementKinds},
		{"paid, in no payout, 15 days, later payouts read", checks,
			payrecon.SettlementInput{Local: local("paid", 1000, "usd", 15*24*time.Hour), LaterPayout: true},
			[]payrecon.Kind{payrecon.KindPaidNotSettled},
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"paid, in no payout, 13 days", checks,
			payrecon.SettlementInput{Local: local("paid", 1000, "usd", 13*24*time.Hour), LaterPayout: true}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"paid, in no payout, no later payout", checks,
			payrecon.SettlementInput{Local: local("paid", 1000, "usd", 30*24*time.Hour)}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"paid, not yet verified as captured", checks,
			payrecon.SettlementInput{Local: func() *payrecon.SettlementLocal {
				l := local("paid", 1000, "usd", 30*24*time.Hour)
				l.Observed = ""
				return l
			}(), LaterPayout: true}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"pending, in no payout: nothing to settle", checks,
			payrecon.SettlementInput{Local: local("pending", 1000, "usd", 30*24*time.Hour), LaterPayout: true}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally, payrecon.KindPaidNotSettled}},
		{"settle-after off", payrecon.SettlementChecks{Amount: true, Currency: true},
			payrecon.SettlementInput{Local: local("paid", 1000, "usd", 30*24*time.Hour), LaterPayout: true}, nil,
			[]payrecon.Kind{payrecon.KindSettledNotPaidLocally}},
		{"ignored kind neither judged nor returned",
			payrecon.SettlementChecks{Amount: true, Currency: true, SettleAfter: checks.SettleAfter, Ignore: map[payrecon.Kind]bool{payrecon.KindSettledNotPaidLocally: true}},
			payrecon.SettlementInput{Settled: settled}, nil,
			[]payrecon.Kind{payrecon.KindPaidNotSettled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.in.Now, tc.in.IntentID = now, "pi_1"
			j := tc.checks.Judge(tc.in)
			var got []payrecon.Kind
			for _, d := range j.Drifts {
				got = append(got, d.Kind)
				if d.Reason == "" {
					t.Errorf("%s without a reason", d.Kind)
				}
				if !slices.Contains(j.Judged, d.Kind) {
					t.Errorf("%s found but not judged", d.Kind)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("drifts %v, want %v", got, tc.want)
			}
			if !slices.Equal(j.Judged, tc.judged) {
				t.Errorf("judged %v, want %v", j.Judged, tc.judged)
			}
		})
	}
}

// The settlement kinds are finding kinds, side kinds (never healed by the
// sweep's status verdict), and each rule explains itself.
func TestSettlementTableComplete(t *testing.T) {
	t.Parallel()
	var kinds []payrecon.Kind
	for _, r := range payrecon.SettlementTable() {
		kinds = append(kinds, r.Kind)
		if r.Verdict() != payrecon.NeedsReview || r.Meaning == "" || r.Action == "" {
			t.Errorf("rule %s: verdict %s, meaning %q, action %q", r.Kind, r.Verdict(), r.Meaning, r.Action)
		}
	}
	if !slices.Equal(kinds, payrecon.SettlementKinds) {
		t.Errorf("settlement table kinds %v, want %v", kinds, payrecon.SettlementKinds)
	}
	for _, k := range payrecon.SettlementKinds {
		if !slices.Contains(payrecon.Kinds, k) || !slices.Contains(payrecon.SideKinds(), k) || !k.IsSettlement() {
			t.Errorf("%s: in Kinds %v, side kind %v", k, slices.Contains(payrecon.Kinds, k), slices.Contains(payrecon.SideKinds(), k))
		}
	}
	for _, typ := range payrecon.PayoutEventTypes {
		if !slices.Contains(payrecon.CatchUpEventTypes, typ) {
			t.Errorf("the catch-up does not list %s", typ)
		}
	}
	if n := len(payrecon.CatchUpEventTypes); n > 20 {
		t.Errorf("%d catch-up types: Stripe lists at most 20 at once", n)
	}
}

// A payout's lines add up by category; the payout's own line is left out;
// a payout whose lines do not add up, or that failed after it was paid, is
// flagged.
func TestPayoutTotalsAndCheck(t *testing.T) {
	t.Parallel()
	lines := []payrecon.PayoutLine{
		{ID: "txn_1", PayoutID: "po_1", ReportingCategory: "charge", Amount: 10000, Fee: 320, Net: 9680},
		{ID: "txn_2", PayoutID: "po_1", ReportingCategory: "charge", Amount: 5000, Fee: 175, Net: 4825},
		{ID: "txn_3", PayoutID: "po_1", ReportingCategory: "refund", Amount: -2000, Net: -2000},
		{ID: "txn_4", PayoutID: "po_1", ReportingCategory: "dispute", Amount: -5000, Fee: 1500, Net: -6500},
		{ID: "txn_5", PayoutID: "po_1", ReportingCategory: "fee", Amount: -200, Net: -200},
		{ID: "txn_6", PayoutID: "po_1", ReportingCategory: "other_adjustment", Amount: 300, Net: 300},
		{ID: "txn_7", PayoutID: "po_1", ReportingCategory: "payout", Amount: -6105, Net: -6105, SourceID: "po_1"},
	}
	tot := payrecon.TotalsOf(payrecon.SumPayoutLines(lines))
	want := payrecon.PayoutTotals{Lines: 6, Gross: 15000, Refunds: -2000, Disputes: -5000, Fees: -320 - 175 - 1500 - 200, Other: 300, Net: 6105}
	if tot != want {
		t.Fatalf("totals %+v, want %+v", tot, want)
	}
	if sum := tot.Gross + tot.Refunds + tot.Disputes + tot.Fees + tot.Other; sum != tot.Net {
		t.Errorf("gross+refunds+disputes+fees+other = %d, net %d", sum, tot.Net)
	}
	p := payrecon.Payout{ID: "po_1", Amount: 6105, Status: payrecon.PayoutPaid, Automatic: true}
	if got := payrecon.CheckPayout(p, true, tot, true); len(got) != 0 {
		t.Errorf("sound payout flagged %v", got)
	}
	p.Amount = 6106
	if got := payrecon.CheckPayout(p, true, tot, true); !slices.Equal(got, []payrecon.PayoutProblem{payrecon.ProblemLinesDoNotAddUp}) {
		t.Errorf("payout off by one: %v", got)
	}
	if got := payrecon.CheckPayout(p, false, payrecon.PayoutTotals{}, false); len(got) != 0 {
		t.Errorf("lines not read yet: %v", got)
	}
	p.Amount, p.Status = 6105, payrecon.PayoutFailed
	if got := payrecon.CheckPayout(p, true, tot, true); !slices.Equal(got, []payrecon.PayoutProblem{payrecon.ProblemFailedAfterPaid}) {
		t.Errorf("failed after paid: %v", got)
	}
	if got := payrecon.CheckPayout(p, true, tot, false); len(got) != 0 {
		t.Errorf("failed, never seen paid: %v", got)
	}
	p.Status = payrecon.PayoutCanceled
	if got := payrecon.CheckPayout(p, true, tot, true); !slices.Equal(got, []payrecon.PayoutProblem{payrecon.ProblemCanceledAfterPaid}) {
		t.Errorf("canceled after paid: %v", got)
	}
}

func TestPayoutEventID(t *testing.T) {
	t.Parallel()
	ev := payrecon.Event{Type: payrecon.EventPayoutPaid, Object: payrecon.EventObject{ID: "po_1", Object: "payout"}}
	if ev.PayoutID() != "po_1" {
		t.Errorf("payout.paid: %q", ev.PayoutID())
	}
	ev.Type = "payout.created"
	if ev.PayoutID() != "" {
		t.Errorf("payout.created is not acted on: %q", ev.PayoutID())
	}
	ev = payrecon.Event{Type: payrecon.EventPayoutFailed, Object: payrecon.EventObject{ID: "ch_1", Object: "charge"}}
	if ev.PayoutID() != "" {
		t.Errorf("a payout event whose object is no payout: %q", ev.PayoutID())
	}
}

// The README carries the generated settlement table.
func TestReadmeSettlementTableIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	readme := string(b)
	i := strings.Index(readme, payrecon.BeginSettlementTableMarker)
	j := strings.Index(readme, payrecon.EndSettlementTableMarker)
	if i < 0 || j < i {
		t.Fatalf("README lacks the settlement table markers")
	}
	got := strings.TrimSpace(readme[i+len(payrecon.BeginSettlementTableMarker) : j])
	if want := strings.TrimSpace(payrecon.FormatSettlementTable()); got != want {
		t.Errorf("README's settlement table differs from `payrecon classify --table`; regenerate it.\nwant:\n%s\ngot:\n%s", want, got)
	}
}
