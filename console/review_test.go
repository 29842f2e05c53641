package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
)

// Under --repair-mode review the console shows the held repairs (overview,
// their page, the finding's page) and approves them: one by one or all,
// only with a CSRF token, audited with the operator; the running service
// then applies the approved one once, and one whose finding was resolved
// meanwhile is dropped, never applied.
func TestApproveHeldRepairs(t *testing.T) {
	t.Parallel()
	b := setupMode(t, password, payrecon.RepairReview)
	c := login(t, b.admin, "ivan")
	ov := get(t, b.admin+"/console/", c)
	if !strings.Contains(ov.body, "Held for review") || !strings.Contains(ov.body, `<a href="/console/repairs">2</a>`) {
		t.Fatalf("the overview does not show 2 held repairs:\n%s", ov.body)
	}
	page := get(t, b.admin+"/console/repairs", c)
	succeeded, canceled := b.findingOf(t, "pi_missed_0"), b.findingOf(t, "pi_missed_1")
	var outbox [2]int64
	for i, f := range []int64{succeeded, canceled} {
		if err := b.pool.QueryRow(t.Context(), "SELECT id FROM outbox WHERE (payload->>'finding_id')::bigint = $1", f).Scan(&outbox[i]); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(page.body, fmt.Sprintf("Approve %d", outbox[i])) {
			t.Errorf("the held repairs page offers no Approve for outbox %d", outbox[i])
		}
	}
	if !strings.Contains(page.body, "Approve all 2 held repairs") {
		t.Error("the held repairs page offers no Approve all")
	}
	finding := get(t, fmt.Sprintf("%s/console/findings/%d", b.admin, succeeded), c)
	if !strings.Contains(finding.body, "held for review since") || !strings.Contains(finding.body, "Approve repair") {
		t.Error("the finding's page does not say its repair is held, or offers no approval")
	}
	token := csrfOf(t, page.body)
	approve := fmt.Sprintf("%s/console/repairs/%d/approve", b.admin, outbox[0])
	if r := post(t, approve, url.Values{}, nil, c); r.status != http.StatusForbidden {
		t.Fatalf("approve without a CSRF token = %d, want 403", r.status)
	}
	if r := post(t, approve, url.Values{"csrf": {token}}, http.Header{"Origin": {"https://evil.example"}}, c); r.status != http.StatusForbidden {
		t.Fatalf("approve from another origin = %d, want 403", r.status)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE approved_at IS NOT NULL"); n != 0 {
		t.Fatalf("a refused approval approved %d commands", n)
	}
	r := post(t, approve, url.Values{"csrf": {token}}, nil, c)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/repairs" {
		t.Fatalf("approve = %d to %q", r.status, r.header.Get("Location"))
	}
	testkit.WaitFor(t, "the approved repair to be applied", 30*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid' AND version = 1", b.payments["pi_missed_0"]) == 1
	})
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE action = 'approve_repair' AND operator = 'ivan' AND finding_id = $1 AND outcome = $2",
		succeeded, fmt.Sprintf("approved repair command %d", outbox[0])); n != 1 {
		t.Error("the approval is not audited with the operator")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND approved_by = 'ivan'", outbox[0]); n != 1 {
		t.Error("the command does not record who approved it")
	}

	// The other finding is resolved by hand; Approve all then drops its
	// command instead of applying it.
	pgtest.Exec(t, b.pool, "UPDATE reconciliation_findings SET resolved_at = now(), resolution = 'operator', resolved_by = 'ivan' WHERE id = $1", canceled)
	r = post(t, b.admin+"/console/repairs/approve-all", url.Values{"csrf": {token}}, nil, c)
	if r.status != http.StatusSeeOther {
		t.Fatalf("approve all = %d", r.status)
	}
	after := get(t, b.admin+"/console/repairs", append(r.cookie, c)...)
	if !strings.Contains(after.body, "Dropped 1 whose finding had closed") || !strings.Contains(after.body, "No repair is held for review") {
		t.Errorf("approve all does not say it dropped the closed finding's repair:\n%s", after.body)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND outcome LIKE 'dropped: %' AND processed_at IS NOT NULL", outbox[1]); n != 1 {
		t.Error("the closed finding's command is not dropped")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM console_audit WHERE action = 'approve_repair' AND finding_id = $1 AND outcome LIKE 'dropped repair command %'", canceled); n != 1 {
		t.Error("the drop is not audited")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'pending' AND version = 0", b.payments["pi_missed_1"]); n != 1 {
		t.Error("the dropped repair moved its payment")
	}
}
