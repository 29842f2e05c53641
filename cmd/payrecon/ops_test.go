package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
)

func mustJSON(t *testing.T, r result, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s%s", r.code, r.stderr, r.stdout)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("JSON: %v\n%s", err, r.stdout)
	}
}

// The operator's loop: scan, status, findings list/show, relay --drain,
// resolve by hand, recheck after Stripe changed.
func TestOperatorWorkflow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{
		{"pending", "succeeded"},            // missed_success: repaired by the relay
		{"paid", "canceled"},                // paid_locally_not_externally: for a person
		{"failed", "succeeded"},             // failed_locally_paid_externally: for a person
		{"paid", "succeeded"}, {"paid", ""}, // in sync; missing_externally
	})
	if r := runCLI(t, b.env, "scan", "--once", "--rps", "0"); r.code != 0 {
		t.Fatalf("scan: %s", r.stderr)
	}

	var st struct {
		LagKnown          bool             `json:"lag_known"`
		OpenFindings      map[string]int64 `json:"open_findings"`
		OpenFindingsTotal int64            `json:"open_findings_total"`
		OutboxBacklog     int64            `json:"outbox_backlog"`
		Jobs              []struct {
			Job                  string  `json:"job"`
			LastCycleCompletedAt string  `json:"last_cycle_completed_at"`
			Throughput           float64 `json:"throughput_rows_per_second"`
		} `json:"jobs"`
	}
	mustJSON(t, runCLI(t, b.env, "status", "--json"), &st)
	if !st.LagKnown || st.OpenFindingsTotal != 4 || st.OpenFindings["missed_success"] != 1 || st.OutboxBacklog != 1 ||
		len(st.Jobs) != 1 || st.Jobs[0].LastCycleCompletedAt == "" || st.Jobs[0].Throughput <= 0 {
		t.Errorf("status = %+v", st)
	}
	r := runCLI(t, b.env, "status")
	for _, want := range []string{"reconciliation lag", "job payments-vs-stripe", "projected cycle time", "missed_success", "1 waiting"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status text lacks %q:\n%s", want, r.stdout)
		}
	}

	var list []struct {
		ID        int64  `json:"id"`
		Kind      string `json:"kind"`
		PaymentID *int64 `json:"payment_id"`
	}
	mustJSON(t, runCLI(t, b.env, "findings", "list", "--json"), &list)
	if len(list) != 4 {
		t.Fatalf("findings list: %d findings, want 4", len(list))
	}
	byKind := map[string]int64{}
	for _, f := range list {
		byKind[f.Kind] = f.ID
	}
	mustJSON(t, runCLI(t, b.env, "findings", "list", "--json", "--kind", "missed_success,missing_externally"), &list)
	if len(list) != 2 {
		t.Errorf("--kind filter: %d findings, want 2", len(list))
	}
	if r := runCLI(t, b.env, "findings", "list", "--kind", "bogus"); r.code != 2 {
		t.Errorf("bad --kind: exit %d", r.code)
	}

	r = runCLI(t, b.env, "findings", "show", fmt.Sprint(byKind["missed_success"]))
	for _, want := range []string{"missed_success", "ApplyPaymentSucceeded", "queued", "pending"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("findings show lacks %q:\n%s", want, r.stdout)
		}
	}

	var drain struct {
		Applied int `json:"applied"`
	}
	mustJSON(t, runCLI(t, b.env, "relay", "--drain", "--json"), &drain)
	if drain.Applied != 1 {
		t.Errorf("relay --drain applied %d, want 1", drain.Applied)
	}
	var shown struct {
		Finding struct {
			Resolution *string `json:"resolution"`
		} `json:"finding"`
		Payment struct {
			Status  string `json:"status"`
			Version int64  `json:"version"`
		} `json:"payment"`
		Repair struct {
			State string `json:"state"`
		} `json:"repair"`
	}
	mustJSON(t, runCLI(t, b.env, "findings", "show", "--json", fmt.Sprint(byKind["missed_success"])), &shown)
	if shown.Finding.Resolution == nil || *shown.Finding.Resolution != "repaired" || shown.Payment.Status != "paid" ||
		shown.Payment.Version != 1 || shown.Repair.State != "applied" {
		t.Errorf("after the drain: %+v", shown)
	}

	// Resolving by hand needs a note, records who, and happens once.
	review := fmt.Sprint(byKind["paid_locally_not_externally"])
	if r := runCLI(t, b.env, "findings", "resolve", review); r.code != 2 || !strings.Contains(r.stderr, "--note") {
		t.Errorf("resolve without --note: exit %d %q", r.code, r.stderr)
	}
	env := map[string]string{"USER": "ana"}
	for k, v := range b.env {
		env[k] = v
	}
	r = runCLI(t, env, "findings", "resolve", review, "--note", "refunded by hand, order cancelled")
	if r.code != 0 || !strings.Contains(r.stdout, "resolved by ana") {
		t.Errorf("resolve: exit %d %s%s", r.code, r.stdout, r.stderr)
	}
	pool := pgtestPool(t, b.url)
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'operator' AND resolved_by = 'ana' AND resolution_note LIKE 'refunded%'", byKind["paid_locally_not_externally"]); n != 1 {
		t.Error("the operator's resolution was not recorded")
	}
	if r := runCLI(t, env, "findings", "resolve", review, "--note", "again"); r.code == 0 || !strings.Contains(r.stderr, "already resolved") {
		t.Errorf("resolving twice: exit %d %q", r.code, r.stderr)
	}
	if r := runCLI(t, env, "findings", "show", "999999"); r.code != 1 || !strings.Contains(r.stderr, "no finding 999999") {
		t.Errorf("show missing: exit %d %q", r.code, r.stderr)
	}

	// Stripe catches up (the retry is refunded and the intent canceled): a
	// recheck heals the finding at once.
	b.sim.Put(stripesimIntent("pi_cli_0002", payrecon.IntentCanceled))
	var rc struct {
		Finding struct {
			Resolution *string `json:"resolution"`
		} `json:"finding"`
	}
	mustJSON(t, runCLI(t, b.env, "findings", "recheck", "--json", fmt.Sprint(byKind["failed_locally_paid_externally"])), &rc)
	if rc.Finding.Resolution == nil || *rc.Finding.Resolution != "healed" {
		t.Errorf("recheck after Stripe caught up: %+v", rc)
	}
	_ = ids
}

func TestPlanCommand(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "plan", "--rows", "10000", "--batch", "200", "--runs-per-hour", "1", "--growth", "250")
	if r.code != 0 || !strings.Contains(r.stdout, "never completes") {
		t.Errorf("plan: %d %s", r.code, r.stdout)
	}
	var p struct {
		Plan payrecon.PlanResult `json:"plan"`
	}
	mustJSON(t, runCLI(t, nil, "plan", "--rows", "10000000", "--rps", "25", "--json"), &p)
	if !p.Plan.Completes || p.Plan.CycleTime.Hours() < 110 || p.Plan.CycleTime.Hours() > 112 {
		t.Errorf("plan --rps 25 for 10 M rows: %+v", p.Plan)
	}
	if r := runCLI(t, nil, "plan"); r.code != 2 {
		t.Errorf("plan without figures: exit %d", r.code)
	}
	b := setup(t)
	b.seed(t, [][2]string{{"paid", "succeeded"}, {"paid", "succeeded"}})
	if r := runCLI(t, b.env, "plan", "--from-db"); r.code != 1 || !strings.Contains(r.stderr, "no measured throughput") {
		t.Errorf("plan --from-db before any sweep: %d %s", r.code, r.stderr)
	}
	runCLI(t, b.env, "scan", "--once", "--rps", "0")
	mustJSON(t, runCLI(t, b.env, "plan", "--from-db", "--json"), &p)
	if p.Plan.Rows != 2 || p.Plan.RowsPerSecond <= 0 || !p.Plan.Completes {
		t.Errorf("plan --from-db: %+v", p.Plan)
	}
}

// A command that can never apply is dead-lettered, listed, and applied once
// an operator fixes it and retries.
func TestRelayDeadLetterAndRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.seed(t, [][2]string{{"pending", "succeeded"}})
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Payment', $1::text, 'ApplyPaymentSucceded', jsonb_build_object('payment_id', $2::bigint))`,
		fmt.Sprint(ids[0]), ids[0])
	var drain struct {
		DeadLettered int `json:"dead_lettered"`
	}
	mustJSON(t, runCLI(t, b.env, "relay", "--drain", "--json"), &drain)
	if drain.DeadLettered != 1 {
		t.Fatalf("dead-lettered %d, want 1", drain.DeadLettered)
	}
	var dl []struct {
		JobID     int64  `json:"job_id"`
		LastError string `json:"last_error"`
	}
	mustJSON(t, runCLI(t, b.env, "relay", "--dead-letters", "--json"), &dl)
	if len(dl) != 1 || !strings.Contains(dl[0].LastError, "unknown event_type") {
		t.Fatalf("dead letters: %+v", dl)
	}
	r := runCLI(t, b.env, "status")
	if !strings.Contains(r.stdout, "1 dead letters") || !strings.Contains(r.stdout, "WARNING") {
		t.Errorf("status does not warn about the dead letter:\n%s", r.stdout)
	}
	pgtest.Exec(t, pool, "UPDATE outbox SET event_type = 'ApplyPaymentSucceeded'")
	if r := runCLI(t, b.env, "relay", "--retry", fmt.Sprint(dl[0].JobID)); r.code != 0 {
		t.Fatalf("retry: %s", r.stderr)
	}
	var again struct {
		Applied int `json:"applied"`
	}
	mustJSON(t, runCLI(t, b.env, "relay", "--drain", "--json"), &again)
	if again.Applied != 1 || pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1") != 1 {
		t.Errorf("after the retry: applied %d", again.Applied)
	}
	_ = context.Background
}
