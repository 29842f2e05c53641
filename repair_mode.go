package payrecon

import (
	"fmt"
	"slices"
	"strings"
)

// RepairMode says what happens to the repair commands payrecon decides on
// (--repair-mode, PAYRECON_REPAIR_MODE).
type RepairMode string

// Repair modes.
const (
	// RepairApply queues each repair command and applies it: the default.
	RepairApply RepairMode = "apply"
	// RepairReview records and queues each repair command but holds it until
	// an operator approves it (payrecon repairs approve, the console's
	// Approve); a held command whose finding heals meanwhile is dropped,
	// never applied. Events (webhooks, the catch-up) that would move a
	// payment are held the same way: they open the decision table's finding
	// with a held command instead of changing the payment.
	RepairReview RepairMode = "review"
	// RepairOff records findings only: no command is queued, and events that
	// would move a payment open their finding without changing it.
	RepairOff RepairMode = "off"
)

// RepairModeDefault is the mode when none is given.
const RepairModeDefault = RepairApply

// RepairModes lists every mode.
var RepairModes = []RepairMode{RepairApply, RepairReview, RepairOff}

// ParseRepairMode reads a mode ("" is the default); an unknown one is an
// error naming the modes.
func ParseRepairMode(s string) (RepairMode, error) {
	m := RepairMode(strings.TrimSpace(s))
	if m == "" {
		return RepairModeDefault, nil
	}
	if !slices.Contains(RepairModes, m) {
		return "", fmt.Errorf("repair mode %q: want apply, review or off", s)
	}
	return m, nil
}

// Queues reports whether commands are queued at all (not off). The zero
// value is apply.
func (m RepairMode) Queues() bool { return m != RepairOff }

// Holds reports whether queued commands wait for an operator's approval.
func (m RepairMode) Holds() bool { return m == RepairReview }

// Applies reports whether payrecon changes payments without an approval:
// apply, or the zero value.
func (m RepairMode) Applies() bool { return m == RepairApply || m == "" }

// String is the mode's name; the zero value is apply.
func (m RepairMode) String() string {
	if m == "" {
		return string(RepairModeDefault)
	}
	return string(m)
}

// Outcomes of an event that would move a payment, under review or off
// (EventResult.Outcome): not applied, its finding opened.
const (
	// OutcomeHeld: the event's transition was not applied; its finding was
	// opened (or already open) with a repair command held for approval.
	OutcomeHeld = "held_for_review"
	// OutcomeNotApplied: the event's transition was not applied (repair mode
	// off, or nothing to hold: a failed attempt, which the decision table
	// judges in sync); its finding, if the table has one, was opened.
	OutcomeNotApplied = "not_applied"
)

// RepairDroppedPrefix begins the outbox outcome of a held repair command
// that was dropped because its finding closed before an approval: it was
// never applied.
const RepairDroppedPrefix = "dropped: "
