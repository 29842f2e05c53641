package payrecon_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

// Every input the session table can see is pinned to its side, written out
// here independently of the table: four statuses (one Stripe may add) ×
// four payment statuses (one unknown) × with and without a PaymentIntent ×
// before and after expires_at.
func TestSessionTableEveryCell(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	want := func(status payrecon.SessionStatus, ps string, intent bool) payrecon.SessionSide {
		switch status {
		case payrecon.SessionOpen:
			return payrecon.SideInFlight
		case payrecon.SessionComplete:
			switch {
			case intent:
				return payrecon.SideIntent
			case ps == payrecon.SessionNoPaymentRequired:
				return payrecon.SideSucceeded
			}
			return payrecon.SideUnknown
		case payrecon.SessionExpired:
			if intent {
				return payrecon.SideIntent
			}
			return payrecon.SideCanceled
		}
		return payrecon.SideUnknown
	}
	cells := 0
	for _, status := range []payrecon.SessionStatus{payrecon.SessionOpen, payrecon.SessionComplete, payrecon.SessionExpired, "paused"} {
		for _, ps := range []string{payrecon.SessionPaid, payrecon.SessionUnpaid, payrecon.SessionNoPaymentRequired, "later"} {
			for _, intent := range []bool{false, true} {
				for _, expires := range []time.Time{now.Add(time.Hour), now, now.Add(-time.Hour)} {
					s := payrecon.Session{ID: "cs_1", Status: status, PaymentStatus: ps, ExpiresAt: expires}
					if intent {
						s.PaymentIntentID = "pi_1"
					}
					got := payrecon.SessionRule(s, now)
					if w := want(status, ps, intent); got.Side != w {
						t.Errorf("%s/%s intent=%v expires %s: side %s, want %s", status, ps, intent, expires.Sub(now), got.Side, w)
					}
					if status == payrecon.SessionOpen {
						wantExpiry := payrecon.SessionBeforeExpiry
						if !now.Before(expires) {
							wantExpiry = payrecon.SessionAfterExpiry
						}
						if got.Expiry != wantExpiry {
							t.Errorf("open session expiring %s: rule %q, want %q", expires.Sub(now), got.Expiry, wantExpiry)
						}
					}
					cells++
				}
			}
		}
	}
	if cells != 96 {
		t.Fatalf("enumerated %d inputs", cells)
	}
}

// Each rule of the table is reached by some session: none is dead.
func TestSessionTableNoDeadRule(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	reached := map[string]bool{}
	for _, status := range []payrecon.SessionStatus{payrecon.SessionOpen, payrecon.SessionComplete, payrecon.SessionExpired, "paused"} {
		for _, ps := range payrecon.SessionPaymentStatuses {
			for _, pi := range []string{"", "pi_1"} {
				for _, exp := range []time.Time{now.Add(time.Hour), now.Add(-time.Hour)} {
					c := payrecon.SessionRule(payrecon.Session{Status: status, PaymentStatus: ps, PaymentIntentID: pi, ExpiresAt: exp}, now)
					reached[fmt.Sprint(c)] = true
				}
			}
		}
	}
	for _, c := range payrecon.SessionTable() {
		if !reached[fmt.Sprint(c)] {
			t.Errorf("rule never reached: %+v", c)
		}
	}
}

// The session's side goes through the one decision table.
func TestJudgeSession(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	succeeded := &payrecon.Intent{ID: "pi_9", Status: payrecon.IntentSucceeded, Amount: 500, AmountReceived: 500, Currency: "usd"}
	processing := &payrecon.Intent{ID: "pi_9", Status: payrecon.IntentProcessing}
	for _, tc := range []struct {
		name     string
		local    payrecon.LocalStatus
		s        payrecon.Session
		observed payrecon.StripeStatus
		verdict  payrecon.Verdict
		kind     payrecon.Kind
		command  payrecon.Command
		intent   bool
	}{
		{"open pending", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionOpen, ExpiresAt: now.Add(time.Hour)}, payrecon.ObservedSessionOpen, payrecon.InFlight, "", "", false},
		{"open paid is not judged either", payrecon.StatusPaid, payrecon.Session{Status: payrecon.SessionOpen, ExpiresAt: now.Add(time.Hour)}, payrecon.ObservedSessionOpen, payrecon.InFlight, "", "", false},
		{"open past expiry", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionOpen, ExpiresAt: now.Add(-time.Minute)}, payrecon.ObservedSessionOpen, payrecon.InFlight, "", "", false},
		{"expired pending: missed_cancel", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionExpired, PaymentStatus: payrecon.SessionUnpaid}, payrecon.IntentCanceled, payrecon.Repairable, payrecon.KindMissedCancel, payrecon.ApplyPaymentCanceled, false},
		{"expired failed: in sync", payrecon.StatusFailed, payrecon.Session{Status: payrecon.SessionExpired, PaymentStatus: payrecon.SessionUnpaid}, payrecon.IntentCanceled, payrecon.InSync, "", "", false},
		{"expired paid", payrecon.StatusPaid, payrecon.Session{Status: payrecon.SessionExpired}, payrecon.IntentCanceled, payrecon.NeedsReview, payrecon.KindPaidLocallyNotExternally, "", false},
		{"complete pending: missed_success", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionPaid, PaymentIntentID: "pi_9", PaymentIntent: succeeded}, payrecon.IntentSucceeded, payrecon.Repairable, payrecon.KindMissedSuccess, payrecon.ApplyPaymentSucceeded, true},
		{"complete paid in sync", payrecon.StatusPaid, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionPaid, PaymentIntentID: "pi_9", PaymentIntent: succeeded}, payrecon.IntentSucceeded, payrecon.InSync, "", "", true},
		{"complete async processing", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionUnpaid, PaymentIntentID: "pi_9", PaymentIntent: processing}, payrecon.IntentProcessing, payrecon.InFlight, "", "", true},
		{"complete failed, money taken", payrecon.StatusFailed, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionPaid, PaymentIntentID: "pi_9", PaymentIntent: succeeded}, payrecon.IntentSucceeded, payrecon.NeedsReview, payrecon.KindFailedLocallyPaidExternally, "", true},
		{"no payment required", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionNoPaymentRequired}, payrecon.IntentSucceeded, payrecon.Repairable, payrecon.KindMissedSuccess, payrecon.ApplyPaymentSucceeded, false},
		{"complete without intent", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionComplete, PaymentStatus: payrecon.SessionPaid}, payrecon.Unknown, payrecon.NeedsReview, payrecon.KindUnknownStatus, "", false},
		{"unknown status", payrecon.StatusPaid, payrecon.Session{Status: "paused"}, payrecon.Unknown, payrecon.NeedsReview, payrecon.KindUnknownStatus, "", false},
		{"intent not expanded", payrecon.StatusPending, payrecon.Session{Status: payrecon.SessionComplete, PaymentIntentID: "pi_9"}, "", "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.ID = "cs_test"
			j := payrecon.JudgeSession(tc.local, tc.s, now)
			if j.Observed != tc.observed || j.Decision.Verdict != tc.verdict || j.Decision.Kind != tc.kind || j.Decision.Command != tc.command {
				t.Errorf("got observed %q %+v, want %q %s %s %s", j.Observed, j.Decision, tc.observed, tc.verdict, tc.kind, tc.command)
			}
			if (j.Intent != nil) != tc.intent {
				t.Errorf("intent judged: %v, want %v", j.Intent != nil, tc.intent)
			}
			if tc.verdict != "" && !strings.Contains(j.Decision.Reason, "cs_test") {
				t.Errorf("reason does not name the session: %q", j.Decision.Reason)
			}
		})
	}
}

// The README carries the generated session table.
func TestReadmeSessionTableIsCurrent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatalf("read README: %v", err)
	}
	readme := string(b)
	i := strings.Index(readme, payrecon.BeginSessionTableMarker)
	j := strings.Index(readme, payrecon.EndSessionTableMarker)
	if i < 0 || j < i {
		t.Fatalf("README lacks the session table markers")
	}
	got := strings.TrimSpace(readme[i+len(payrecon.BeginSessionTableMarker) : j])
	if want := strings.TrimSpace(payrecon.FormatSessionTable()); got != want {
		t.Errorf("README's session table differs from `payrecon classify --table`; regenerate it.\nwant:\n%s\ngot:\n%s", want, got)
	}
}
