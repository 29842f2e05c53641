package payrecon_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

func amt(n int64) *int64 { return &n }

func charge(captured, refunded int64, full, disputed bool) *payrecon.Charge {
	return &payrecon.Charge{ID: "ch_1", AmountCaptured: captured, AmountRefunded: refunded, Refunded: full,
		Disputed: disputed, Currency: "jpy", Created: time.Unix(1_700_000_000, 0)}
}

func kindsOf(fs []payrecon.Drift) []payrecon.Kind {
	out := []payrecon.Kind{}
	for _, f := range fs {
		out = append(out, f.Kind)
	}
	return out
}

// Every money cell, pinned: each rule against each local status and the
// Stripe states that decide it. Changing one is a deliberate act.
func TestClassifyMoneyEveryCell(t *testing.T) {
	t.Parallel()
	var (
		pending = payrecon.StatusPending
		paid    = payrecon.StatusPaid
		failed  = payrecon.StatusFailed
		ok      = []payrecon.Kind{}
		yen     = func(c *payrecon.Charge) payrecon.Intent {
			return payrecon.Intent{ID: "pi_1", Status: payrecon.IntentSucceeded, Amount: 5000, AmountReceived: 5000, Currency: "jpy", LatestCharge: c}
		}
		withStatus = func(in payrecon.Intent, s payrecon.StripeStatus) payrecon.Intent { in.Status = s; return in }
		received   = func(in payrecon.Intent, n int64) payrecon.Intent { in.AmountReceived = n; return in }
		asked      = func(in payrecon.Intent, n int64) payrecon.Intent { in.Amount = n; return in }
		local5000  = payrecon.LocalMoney{Amount: amt(5000), Currency: "JPY"}
	)
	cases := []struct {
		name   string
		local  payrecon.LocalStatus
		money  payrecon.LocalMoney
		intent payrecon.Intent
		want   []payrecon.Kind
	}{
		// In sync: equal amounts, same currency in another case, no refund, no dispute.
		{"paid equal", paid, local5000, yen(charge(5000, 0, false, false)), ok},
		{"pending equal, no charge", pending, local5000, withStatus(received(yen(nil), 0), payrecon.IntentRequiresPaymentMethod), ok},
		// NULL local amount and currency: never compared.
		{"NULL amount", paid, payrecon.LocalMoney{}, received(asked(yen(charge(5000, 0, false, false)), 1), 2), ok},
		{"NULL amount, other currency", pending, payrecon.LocalMoney{}, func() payrecon.Intent { in := yen(nil); in.Currency = "usd"; return in }(), ok},

		// amount_mismatch: paid/succeeded compares amount_received ...
		{"paid/succeeded captured for less", paid, local5000, asked(received(yen(charge(4000, 0, false, false)), 4000), 5000), []payrecon.Kind{payrecon.KindAmountMismatch}},
		{"paid/succeeded amount differs but received equal", paid, local5000, asked(yen(charge(5000, 0, false, false)), 6000), ok},
		// ... every other pair compares amount.
		{"pending/succeeded compares amount", pending, local5000, received(yen(charge(4000, 0, false, false)), 4000), ok},
		{"pending/succeeded amount differs", pending, local5000, asked(yen(nil), 6000), []payrecon.Kind{payrecon.KindAmountMismatch}},
		{"failed/requires_payment_method amount differs", failed, local5000, withStatus(received(asked(yen(nil), 4999), 0), payrecon.IntentRequiresPaymentMethod), []payrecon.Kind{payrecon.KindAmountMismatch}},
		{"paid/processing compares amount", paid, local5000, withStatus(received(yen(nil), 0), payrecon.IntentProcessing), ok},
		{"paid/processing amount differs", paid, local5000, withStatus(received(asked(yen(nil), 1), 0), payrecon.IntentProcessing), []payrecon.Kind{payrecon.KindAmountMismatch}},

		// currency_mismatch: case-insensitive; empty on either side not compared.
		{"currency differs", paid, payrecon.LocalMoney{Amount: amt(5000), Currency: "usd"}, yen(charge(5000, 0, false, false)), []payrecon.Kind{payrecon.KindCurrencyMismatch}},
		{"currency case only", paid, payrecon.LocalMoney{Amount: amt(5000), Currency: "Jpy"}, yen(charge(5000, 0, false, false)), ok},
		{"Stripe currency empty", paid, local5000, func() payrecon.Intent { in := yen(nil); in.Currency = ""; return in }(), ok},

		// refunded_externally: local paid, charge fully refunded.
		{"paid, fully refunded", paid, local5000, yen(charge(5000, 5000, true, false)), []payrecon.Kind{payrecon.KindRefundedExternally}},
		{"pending, fully refunded", pending, local5000, yen(charge(5000, 5000, true, false)), ok},
		{"failed, fully refunded", failed, local5000, yen(charge(5000, 5000, true, false)), ok},

		// partially_refunded: local paid, 0 < refunded < captured.
		{"paid, partially refunded", paid, local5000, yen(charge(5000, 1000, false, false)), []payrecon.Kind{payrecon.KindPartiallyRefunded}},
		{"paid, refunded 0", paid, local5000, yen(charge(5000, 0, false, false)), ok},
		{"paid, refunded all but flag unset", paid, local5000, yen(charge(5000, 5000, false, false)), ok},
		{"failed, partially refunded", failed, local5000, yen(charge(5000, 1000, false, false)), ok},

		// disputed: whatever the local status.
		{"paid, disputed", paid, local5000, yen(charge(5000, 0, false, true)), []payrecon.Kind{payrecon.KindDisputed}},
		{"pending, disputed", pending, local5000, yen(charge(5000, 0, false, true)), []payrecon.Kind{payrecon.KindDisputed}},
		{"failed, disputed", failed, local5000, yen(charge(5000, 0, false, true)), []payrecon.Kind{payrecon.KindDisputed}},
		{"unknown local status, disputed", "refunded", payrecon.LocalMoney{}, yen(charge(5000, 0, false, true)), []payrecon.Kind{payrecon.KindDisputed}},

		// A charge that came back as an id only was not read: no charge kind.
		{"unexpanded charge", paid, local5000, yen(&payrecon.Charge{ID: "ch_1"}), ok},

		// Several at once, in table order.
		{"everything", paid, payrecon.LocalMoney{Amount: amt(1), Currency: "usd"}, yen(charge(5000, 5000, true, true)),
			[]payrecon.Kind{payrecon.KindAmountMismatch, payrecon.KindCurrencyMismatch, payrecon.KindRefundedExternally, payrecon.KindDisputed}},
	}
	for _, c := range cases {
		got := payrecon.ClassifyMoney(c.local, c.money, c.intent)
		if !slices.Equal(kindsOf(got), c.want) {
			t.Errorf("%s: ClassifyMoney = %v, want %v", c.name, kindsOf(got), c.want)
		}
		for _, f := range got {
			if f.Reason == "" || !f.Kind.IsMoney() {
				t.Errorf("%s: finding %+v lacks a reason or is not a money kind", c.name, f)
			}
		}
	}
}

// Evaluated leaves out ignored kinds, absent columns and unexpanded charges.
func TestMoneyChecksEvaluated(t *testing.T) {
	t.Parallel()
	full := payrecon.MoneyChecks{Amount: true, Currency: true}
	amount := int64(1000)
	local := payrecon.LocalMoney{Amount: &amount, Currency: "usd"}
	if got := full.Evaluated(local, payrecon.Intent{}); !slices.Equal(got, payrecon.MoneyKinds) {
		t.Errorf("all on: %v", got)
	}
	none := payrecon.MoneyChecks{Ignore: map[payrecon.Kind]bool{payrecon.KindDisputed: true}}
	want := []payrecon.Kind{payrecon.KindRefundedExternally, payrecon.KindPartiallyRefunded}
	if got := none.Evaluated(local, payrecon.Intent{}); !slices.Equal(got, want) {
		t.Errorf("no columns, disputed ignored: %v, want %v", got, want)
	}
	if got := full.Evaluated(local, payrecon.Intent{LatestCharge: &payrecon.Charge{ID: "ch_1"}}); !slices.Equal(got, payrecon.MoneyKinds[:2]) {
		t.Errorf("unexpanded charge: %v", got)
	}
	// A NULL amount (or currency) in a column that exists is not compared,
	// so it is not judged: its open finding must not heal (issue 23, 5).
	want = []payrecon.Kind{payrecon.KindCurrencyMismatch, payrecon.KindRefundedExternally, payrecon.KindPartiallyRefunded, payrecon.KindDisputed}
	if got := full.Evaluated(payrecon.LocalMoney{Currency: "usd"}, payrecon.Intent{}); !slices.Equal(got, want) {
		t.Errorf("NULL amount: %v, want %v", got, want)
	}
	want = []payrecon.Kind{payrecon.KindAmountMismatch, payrecon.KindRefundedExternally, payrecon.KindPartiallyRefunded, payrecon.KindDisputed}
	if got := full.Evaluated(payrecon.LocalMoney{Amount: &amount}, payrecon.Intent{}); !slices.Equal(got, want) {
		t.Errorf("NULL currency: %v, want %v", got, want)
	}
}

// The money table names every money kind once, and every rule is
// needs_review.
func TestMoneyTableComplete(t *testing.T) {
	t.Parallel()
	var kinds []payrecon.Kind
	for _, r := range payrecon.MoneyTable() {
		kinds = append(kinds, r.Kind)
		if r.Verdict() != payrecon.NeedsReview || r.Meaning == "" || r.Action == "" {
			t.Errorf("rule %s: verdict %s, meaning %q, action %q", r.Kind, r.Verdict(), r.Meaning, r.Action)
		}
	}
	if !slices.Equal(kinds, payrecon.MoneyKinds) {
		t.Errorf("money table kinds %v, want %v", kinds, payrecon.MoneyKinds)
	}
	for _, k := range payrecon.MoneyKinds {
		if !slices.Contains(payrecon.Kinds, k) {
			t.Errorf("%s is not in payrecon.Kinds", k)
		}
	}
}

// The README carries the generated money table and a row for every kind in
// its finding-kinds table.
func TestReadmeMoneyTableIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	readme := string(b)
	i := strings.Index(readme, payrecon.BeginMoneyTableMarker)
	j := strings.Index(readme, payrecon.EndMoneyTableMarker)
	if i < 0 || j < i {
		t.Fatalf("README lacks the money table markers")
	}
	got := strings.TrimSpace(readme[i+len(payrecon.BeginMoneyTableMarker) : j])
	if want := strings.TrimSpace(payrecon.FormatMoneyTable()); got != want {
		t.Errorf("README's money table differs from `payrecon classify --table`; regenerate it.\nwant:\n%s\ngot:\n%s", want, got)
	}
	for _, k := range payrecon.Kinds {
		if !strings.Contains(readme, "| `"+string(k)+"` |") {
			t.Errorf("README's finding-kinds table has no row for %s", k)
		}
	}
}

// ClassifyMoney is total and only ever returns money kinds.
func FuzzClassifyMoney(f *testing.F) {
	f.Add("paid", int64(5000), "jpy", "succeeded", int64(5000), int64(5000), "JPY", int64(5000), int64(0), false, false, true)
	f.Add("pending", int64(-1), "", "", int64(0), int64(0), "", int64(0), int64(0), true, true, false)
	f.Fuzz(func(t *testing.T, local string, amount int64, cur, status string, asked, received int64, scur string,
		captured, refunded int64, full, disputed, hasCharge bool) {
		in := payrecon.Intent{Status: payrecon.StripeStatus(status), Amount: asked, AmountReceived: received, Currency: scur}
		if hasCharge {
			in.LatestCharge = charge(captured, refunded, full, disputed)
		}
		money := payrecon.LocalMoney{Amount: &amount, Currency: cur}
		got := payrecon.ClassifyMoney(payrecon.LocalStatus(local), money, in)
		for _, g := range got {
			if !g.Kind.IsMoney() || g.Reason == "" {
				t.Fatalf("finding %+v", g)
			}
			if (g.Kind == payrecon.KindRefundedExternally || g.Kind == payrecon.KindPartiallyRefunded) && local != "paid" {
				t.Fatalf("%s for local %q", g.Kind, local)
			}
		}
		if len(payrecon.ClassifyMoney(payrecon.LocalStatus(local), payrecon.LocalMoney{}, payrecon.Intent{Status: in.Status, Amount: asked})) != 0 {
			t.Fatal("no local money and no charge must yield nothing")
		}
	})
}
