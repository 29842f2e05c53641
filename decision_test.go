package payrecon_test

import (
	"os"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
)

// Every cell of the decision table, pinned. Changing a verdict is a
// deliberate act: it changes this test, the README and `classify --table`.
func TestClassifyEveryCell(t *testing.T) {
	t.Parallel()
	type want struct {
		verdict payrecon.Verdict
		kind    payrecon.Kind
		command payrecon.Command
	}
	var (
		sync    = want{payrecon.InSync, "", ""}
		flight  = want{payrecon.InFlight, "", ""}
		missing = want{payrecon.NeedsReview, payrecon.KindMissingExternally, ""}
		unknown = want{payrecon.NeedsReview, payrecon.KindUnknownStatus, ""}
		paidNot = want{payrecon.NeedsReview, payrecon.KindPaidLocallyNotExternally, ""}
		pending = payrecon.StatusPending
		paid    = payrecon.StatusPaid
		failed  = payrecon.StatusFailed
	)
	cases := []struct {
		local  payrecon.LocalStatus
		stripe payrecon.StripeStatus
		want   want
	}{
		{pending, payrecon.IntentRequiresPaymentMethod, sync},
		{pending, payrecon.IntentRequiresConfirmation, flight},
		{pending, payrecon.IntentRequiresAction, flight},
		{pending, payrecon.IntentProcessing, flight},
		{pending, payrecon.IntentRequiresCapture, flight},
		{pending, payrecon.IntentCanceled, want{payrecon.Repairable, payrecon.KindMissedCancel, payrecon.ApplyPaymentCanceled}},
		{pending, payrecon.IntentSucceeded, want{payrecon.Repairable, payrecon.KindMissedSuccess, payrecon.ApplyPaymentSucceeded}},
		{pending, payrecon.NotFound, missing},
		{pending, "some_future_status", unknown},

		{paid, payrecon.IntentRequiresPaymentMethod, paidNot},
		{paid, payrecon.IntentRequiresConfirmation, paidNot},
		{paid, payrecon.IntentRequiresAction, paidNot},
		{paid, payrecon.IntentProcessing, paidNot},
		{paid, payrecon.IntentRequiresCapture, paidNot},
		{paid, payrecon.IntentCanceled, paidNot},
		{paid, payrecon.IntentSucceeded, sync},
		{paid, payrecon.NotFound, missing},
		{paid, "", unknown},

		// Design item 10: a failed attempt returns the intent to
		// requires_payment_method, so this is in sync, not "unexpected".
		{failed, payrecon.IntentRequiresPaymentMethod, sync},
		{failed, payrecon.IntentRequiresConfirmation, flight},
		{failed, payrecon.IntentRequiresAction, flight},
		{failed, payrecon.IntentProcessing, flight},
		{failed, payrecon.IntentRequiresCapture, flight},
		{failed, payrecon.IntentCanceled, sync},
		// The customer retried and paid: money taken on an order marked failed.
		{failed, payrecon.IntentSucceeded, want{payrecon.NeedsReview, payrecon.KindFailedLocallyPaidExternally, ""}},
		{failed, payrecon.NotFound, missing},
		{failed, payrecon.Unknown, unknown},

		{"refunded", payrecon.IntentSucceeded, unknown},
	}
	for _, c := range cases {
		got := payrecon.Classify(c.local, c.stripe)
		if got.Verdict != c.want.verdict || got.Kind != c.want.kind || got.Command != c.want.command {
			t.Errorf("Classify(%q, %q) = %s/%s/%s, want %s/%s/%s", c.local, c.stripe,
				got.Verdict, got.Kind, got.Command, c.want.verdict, c.want.kind, c.want.command)
		}
		if got.Reason == "" {
			t.Errorf("Classify(%q, %q) has no reason", c.local, c.stripe)
		}
	}
}

// The table has exactly one cell per (local, Stripe) pair: 3 × (7 + 2).
func TestDecisionTableComplete(t *testing.T) {
	t.Parallel()
	table := payrecon.DecisionTable()
	if want := len(payrecon.LocalStatuses) * (len(payrecon.StripeStatuses) + 2); len(table) != want {
		t.Fatalf("decision table has %d cells, want %d", len(table), want)
	}
	seen := map[[2]string]bool{}
	for _, c := range table {
		k := [2]string{string(c.Local), string(c.Stripe)}
		if seen[k] {
			t.Errorf("duplicate cell %v", k)
		}
		seen[k] = true
	}
	for _, l := range payrecon.LocalStatuses {
		for _, s := range append(append([]payrecon.StripeStatus{}, payrecon.StripeStatuses...), payrecon.NotFound, payrecon.Unknown) {
			if !seen[[2]string{string(l), string(s)}] {
				t.Errorf("missing cell (%s, %s)", l, s)
			}
		}
	}
}

// Invariants that tie the decision table to the transition table: only
// repairable cells carry a command; a repair lands the payment in a state
// the table calls in sync with the same Stripe status; kinds are set exactly
// when the verdict is repairable or needs_review.
func TestDecisionTableInvariants(t *testing.T) {
	t.Parallel()
	for _, c := range payrecon.DecisionTable() {
		name := string(c.Local) + "/" + string(c.Stripe)
		hasKind := c.Kind != ""
		wantKind := c.Verdict == payrecon.Repairable || c.Verdict == payrecon.NeedsReview
		if hasKind != wantKind {
			t.Errorf("%s: verdict %s with kind %q", name, c.Verdict, c.Kind)
		}
		if (c.Command != "") != (c.Verdict == payrecon.Repairable) {
			t.Errorf("%s: verdict %s with command %q", name, c.Verdict, c.Command)
		}
		if c.Command == "" {
			continue
		}
		tr, ok := payrecon.TransitionFor(c.Command)
		if !ok {
			t.Errorf("%s: command %s has no transition", name, c.Command)
			continue
		}
		if !tr.Allows(c.Local) {
			t.Errorf("%s: command %s does not apply from %s", name, c.Command, c.Local)
		}
		if after := payrecon.Classify(tr.To, c.Stripe); after.Verdict != payrecon.InSync {
			t.Errorf("%s: after %s the payment is %s, which is %s, not in sync", name, c.Command, tr.To, after.Verdict)
		}
	}
}

// No transition leads back to pending, and every webhook event maps to a
// known command.
func TestTransitionsNeverGoBackwards(t *testing.T) {
	t.Parallel()
	for _, tr := range payrecon.Transitions() {
		if tr.To == payrecon.StatusPending {
			t.Errorf("%s moves a payment back to pending", tr.Command)
		}
		if tr.Allows(tr.To) {
			t.Errorf("%s applies from its own target %s: not idempotent", tr.Command, tr.To)
		}
	}
	for _, ev := range []string{payrecon.EventPaymentIntentSucceeded, payrecon.EventPaymentIntentCanceled, payrecon.EventPaymentIntentPaymentFailed} {
		cmd, ok := payrecon.CommandForEvent(ev)
		if !ok {
			t.Errorf("event %s maps to no command", ev)
			continue
		}
		if _, ok := payrecon.TransitionFor(cmd); !ok {
			t.Errorf("event %s maps to %s, which has no transition", ev, cmd)
		}
	}
	if _, ok := payrecon.CommandForEvent("charge.refunded"); ok {
		t.Error("charge.refunded must be recorded without acting")
	}
}

// The README carries the generated table; it must not drift from the code.
func TestReadmeDecisionTableIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	readme := string(b)
	i := strings.Index(readme, payrecon.BeginTableMarker)
	j := strings.Index(readme, payrecon.EndTableMarker)
	if i < 0 || j < i {
		t.Fatalf("README lacks the decision table markers %q … %q", payrecon.BeginTableMarker, payrecon.EndTableMarker)
	}
	got := strings.TrimSpace(readme[i+len(payrecon.BeginTableMarker) : j])
	if want := strings.TrimSpace(payrecon.FormatDecisionTable()); got != want {
		t.Errorf("README's decision table differs from `payrecon classify --table`; regenerate it.\nwant:\n%s\ngot:\n%s", want, got)
	}
}

// Classify is total: any strings, no panic, a verdict from the list, a
// reason, and a command only on repairable verdicts.
func FuzzClassify(f *testing.F) {
	for _, c := range payrecon.DecisionTable() {
		f.Add(string(c.Local), string(c.Stripe))
	}
	f.Add("", "")
	f.Add("PAID", "Succeeded")
	f.Fuzz(func(t *testing.T, local, stripe string) {
		d := payrecon.Classify(payrecon.LocalStatus(local), payrecon.StripeStatus(stripe))
		valid := false
		for _, v := range payrecon.Verdicts {
			valid = valid || d.Verdict == v
		}
		if !valid {
			t.Fatalf("Classify(%q, %q) verdict %q is not a verdict", local, stripe, d.Verdict)
		}
		if d.Verdict == payrecon.Unverifiable {
			t.Fatalf("Classify(%q, %q) is unverifiable: only the sweep decides that", local, stripe)
		}
		if d.Reason == "" {
			t.Fatalf("Classify(%q, %q) has no reason", local, stripe)
		}
		if (d.Command != "") != (d.Verdict == payrecon.Repairable) {
			t.Fatalf("Classify(%q, %q) = %+v: command without repairable verdict", local, stripe, d)
		}
		if d.Verdict == payrecon.Repairable && payrecon.LocalStatus(local) != payrecon.StatusPending {
			t.Fatalf("Classify(%q, %q) repairs a %s payment", local, stripe, local)
		}
	})
}
