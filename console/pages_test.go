package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Every page renders what the database holds: the overview's figures and
// money at stake, the list, a finding with its timeline, the lookup.
func TestPagesShowTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t, password)
	b.webhook(t, "evt_pages_1", "payment_intent.canceled", "pi_review_0", "canceled")
	c := login(t, b.admin, "alice")
	review := b.findingOf(t, "pi_review_0")
	missed := b.findingOf(t, "pi_missed_0")
	for _, p := range []struct {
		path string
		want []string
	}{
		{"/console/", []string{"Reconciliation lag", "Open findings", "paid_locally_not_externally",
			"25.00 USD", "(2 with an amount)", "12.50 EUR", "failed_locally_paid_externally", "Notifications", "Last 7 days", "<svg"}},
		{"/console/findings", []string{"pi_review_0", "pi_refund_1", "pi_gone_0", "12.50 USD"}},
		{"/console/findings?state=resolved", []string{"pi_missed_0", "repaired"}},
		{fmt.Sprintf("/console/findings/%d", review), []string{"Finding #", "paid_locally_not_externally", "order-review_0",
			"&#34;currency&#34;: &#34;usd&#34;", "evt_pages_1", "payment_intent.canceled", "Verified against Stripe", "Recheck now", "Resolve finding"}},
		{fmt.Sprintf("/console/findings/%d", missed), []string{"Repair queued: ApplyPaymentSucceeded", "Repair applied: applied",
			"Status pending → paid (version 1)", "by repair "}},
		{"/console/lookup?q=order-refund_1", []string{"Payment ", "pi_refund_1", "failed_locally_paid_externally"}},
		{"/console/lookup?q=pi_gone_0", []string{"missing_externally"}},
		{fmt.Sprintf("/console/lookup?q=%d", b.payments["pi_ok_0"]), []string{"pi_ok_0", "No findings for this payment."}},
		{"/console/lookup?q=nothing-like-it", []string{"Nothing matches"}},
		{"/console/audit", []string{"No action has been taken"}},
	} {
		r := get(t, b.admin+p.path, c)
		if r.status != http.StatusOK {
			t.Errorf("GET %s = %d\n%s", p.path, r.status, r.body)
			continue
		}
		for _, w := range p.want {
			if !strings.Contains(r.body, w) {
				t.Errorf("GET %s lacks %q", p.path, w)
			}
		}
	}
	// Findings without an amount show none, not zero.
	r := get(t, b.admin+"/console/", c)
	if strings.Contains(r.body, "0.00 USD") {
		t.Error("the overview shows a zero amount for findings without one")
	}
	// One account (no account column): no Accounts pages.
	if strings.Contains(r.body, `href="/console/accounts"`) {
		t.Error("the overview of one account links the Accounts page")
	}
	if r := get(t, b.admin+"/console/accounts", c); r.status != http.StatusOK || !strings.Contains(r.body, "payments has no account column") {
		t.Errorf("the Accounts page of one account = %d\n%s", r.status, r.body)
	}
	if r := get(t, b.admin+"/console/findings?account=platform", c); r.status != http.StatusBadRequest {
		t.Errorf("the findings of an account, with one account = %d, want 400", r.status)
	}
	if r := get(t, b.admin+"/console/accounts/platform", c); r.status != http.StatusNotFound {
		t.Errorf("an account page of one account = %d, want 404", r.status)
	}
	if r := get(t, b.admin+"/console/findings/999999", c); r.status != http.StatusNotFound {
		t.Errorf("a missing finding = %d, want 404", r.status)
	}
	if r := get(t, b.admin+"/console/findings?state=closed", c); r.status != http.StatusBadRequest {
		t.Errorf("a bad filter = %d, want 400", r.status)
	}
}
