package payrecon

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// KindStuckInFlight: a payment observed continuously in one in-flight Stripe
// status (requires_action, requires_confirmation, processing,
// requires_capture) for longer than that status's limit (--stuck-after).
// needs_review, never repaired; healed when it settles (or moves on).
const KindStuckInFlight Kind = "stuck_in_flight"

// DefaultStuckAfter is --stuck-after's default: Stripe cancels uncaptured
// authorisations after 7 days, so requires_capture is flagged a day before.
const DefaultStuckAfter = "requires_action=24h,requires_confirmation=24h,processing=72h,requires_capture=144h"

// StuckStatuses are the statuses --stuck-after may name: Stripe's in-flight
// statuses, where a payment waits for someone.
var StuckStatuses = []StripeStatus{IntentRequiresAction, IntentRequiresConfirmation, IntentProcessing, IntentRequiresCapture}

// StuckAfter is how long a payment may stay in each in-flight status before
// it is stuck; a status not listed is never stuck.
type StuckAfter map[StripeStatus]time.Duration

// ParseStuckAfter parses "status=duration,…" (durations as Go writes them:
// 24h, 90m). An empty string or "off" turns the check off; a duration of 0
// turns one status off. Unknown statuses and bad durations are errors.
func ParseStuckAfter(s string) (StuckAfter, error) {
	out := StuckAfter{}
	if s = strings.TrimSpace(s); s == "" || s == "off" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, fmt.Errorf("--stuck-after %q: want status=duration, e.g. processing=72h", part)
		}
		st := StripeStatus(strings.TrimSpace(k))
		if !slices.Contains(StuckStatuses, st) {
			return nil, fmt.Errorf("--stuck-after: %q is not an in-flight status (want one of requires_action, requires_confirmation, processing, requires_capture)", k)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--stuck-after %s: %q is not a duration like 24h", st, v)
		}
		if d > 0 {
			out[st] = d
		}
	}
	return out, nil
}

// String renders the limits in StuckStatuses order, as --stuck-after takes
// them; "off" when none.
func (sa StuckAfter) String() string {
	var parts []string
	for _, st := range StuckStatuses {
		if d, ok := sa[st]; ok {
			v := d.String()
			if d%time.Hour == 0 {
				v = fmt.Sprintf("%dh", d/time.Hour)
			}
			parts = append(parts, fmt.Sprintf("%s=%s", st, v))
		}
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}
