package payrecon_test

import (
	"testing"

	"github.com/payrecon/payrecon"
)

// Each kind puts one amount at stake: refunds their refunded amount,
// disputes the disputed (captured) charge, every other kind the intent's
// amount; details without that amount are unknown, not zero.
func TestFindingAtStake(t *testing.T) {
	t.Parallel()
	charge := &payrecon.FindingDetails{Currency: "USD", Charge: &payrecon.ChargeDetails{AmountCaptured: 2000, AmountRefunded: 500, Currency: "usd"}}
	for _, c := range []struct {
		kind    payrecon.Kind
		details *payrecon.FindingDetails
		want    payrecon.Stake
	}{
		{payrecon.KindRefundedExternally, charge, payrecon.Stake{Amount: 500, Currency: "usd", Known: true}},
		{payrecon.KindPartiallyRefunded, charge, payrecon.Stake{Amount: 500, Currency: "usd", Known: true}},
		{payrecon.KindDisputed, charge, payrecon.Stake{Amount: 2000, Currency: "usd", Known: true}},
		{payrecon.KindAmountMismatch, &payrecon.FindingDetails{Amount: 1200, Currency: "EUR"}, payrecon.Stake{Amount: 1200, Currency: "eur", Known: true}},
		{payrecon.KindDisputed, &payrecon.FindingDetails{Amount: 1200, Currency: "usd"}, payrecon.Stake{}},
		{payrecon.KindMissedSuccess, nil, payrecon.Stake{}},
	} {
		f := payrecon.Finding{Kind: c.kind, Details: c.details}
		if got := f.AtStake(); got != c.want {
			t.Errorf("%s %+v: at stake %+v, want %+v", c.kind, c.details, got, c.want)
		}
	}
}
