package postgres_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// The overview's money at stake follows the kind's stake basis: the
// refunded amount for refunded_externally and partially_refunded, the
// disputed (captured) amount for disputed (whose webhook findings record
// an intent amount of 0), the intent's amount otherwise; a finding's own
// AtStake reads the same. The payments count says whether it is an
// estimate.
func TestOverviewMoneyAtStakePerKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{
		{IntentID: "pi_stake_0", Status: payrecon.StatusPaid}, {IntentID: "pi_stake_1", Status: payrecon.StatusPaid},
		{IntentID: "pi_stake_2", Status: payrecon.StatusPaid}, {IntentID: "pi_stake_3", Status: payrecon.StatusPaid},
	})
	charge := func(captured, refunded int) string {
		return `{"amount": 0, "amount_received": 0, "currency": "usd", "charge": {"id": "ch_1", "amount_captured": ` +
			itoa(captured) + `, "amount_refunded": ` + itoa(refunded) + `, "currency": "usd"}}`
	}
	for _, f := range []struct {
		payment int64
		kind    payrecon.Kind
		details string
	}{
		{ids[0], payrecon.KindRefundedExternally, charge(1500, 1500)},
		{ids[1], payrecon.KindRefundedExternally, charge(2500, 2500)},
		{ids[2], payrecon.KindDisputed, charge(1750, 0)},
		{ids[3], payrecon.KindPartiallyRefunded, charge(4000, 1000)},
		{ids[0], payrecon.KindAmountMismatch, `{"amount": 1200, "amount_received": 1200, "currency": "usd"}`},
	} {
		pgtest.Exec(t, pool, `INSERT INTO reconciliation_findings (payment_id, kind, local_status, external_status, details)
			VALUES ($1, $2, 'paid', 'succeeded', $3::jsonb)`, f.payment, string(f.kind), f.details)
	}
	reader := postgres.NewConsoleReader(pool, postgres.ConsoleConfig{RepairKind: "repair"})
	ov, err := reader.Overview(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := map[payrecon.Kind]int64{payrecon.KindRefundedExternally: 4000, payrecon.KindDisputed: 1750,
		payrecon.KindPartiallyRefunded: 1000, payrecon.KindAmountMismatch: 1200}
	for _, k := range ov.Open {
		if len(k.Money) != 1 || k.Money[0].Currency != "usd" || k.Money[0].Amount != want[k.Kind] {
			t.Errorf("%s: money at stake %+v, want %d usd", k.Kind, k.Money, want[k.Kind])
		}
		delete(want, k.Kind)
	}
	if len(want) != 0 {
		t.Errorf("kinds missing from the overview: %v", want)
	}
	if ov.RowsExact {
		t.Error("the overview's payments count is the planner's estimate, yet says it is exact")
	}
	fs, err := postgres.NewFindings(pool, nil).List(ctx, postgres.FindingFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		if st := f.AtStake(); !st.Known || st.Currency != "usd" {
			t.Errorf("finding %d (%s) at stake %+v", f.ID, f.Kind, st)
		}
		if f.OrderID == "" {
			t.Errorf("finding %d has no order id", f.ID)
		}
	}
}

func itoa(n int) string {
	return strconv.Itoa(n)
}
