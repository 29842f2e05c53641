package relay_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// holdRepairs seeds n pending payments with an open missed_success finding
// and its command, held for review (as the sweep writes them under
// --repair-mode review), in one transaction.
func (b *testBundle) holdRepairs(t testing.TB, n int) repairs {
	t.Helper()
	ctx := context.Background()
	var before int64
	if err := b.pool.QueryRow(ctx, "SELECT coalesce(max(id), 0) FROM payments").Scan(&before); err != nil {
		t.Fatal(err)
	}
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_held_%d_%d", before, i), Status: payrecon.StatusPending}
	}
	ids := pgtest.InsertPayments(t, b.pool, ps)
	rs, err := b.commitRepairs(ctx, ids, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error { return b.relay.Hold(ctx, tx, rs.outbox) }); err != nil {
		t.Fatal(err)
	}
	return rs
}

// untouched asserts that none of rs's commands was applied: payments still
// pending at version 0, findings open, outbox rows unprocessed; with
// pending, their jobs are still pending too.
func untouched(t testing.TB, b *testBundle, rs repairs, pending bool) {
	t.Helper()
	checks := map[string]string{
		"payments moved":        "SELECT count(*) FROM payments WHERE id = ANY($1) AND (status <> 'pending' OR version <> 0)",
		"transitions written":   "SELECT count(*) FROM payment_transitions WHERE payment_id = ANY($1)",
		"findings resolved":     "SELECT count(*) FROM reconciliation_findings WHERE payment_id = ANY($1) AND resolved_at IS NOT NULL",
		"outbox rows processed": "SELECT count(*) FROM outbox WHERE (payload->>'payment_id')::bigint = ANY($1) AND processed_at IS NOT NULL",
	}
	if pending {
		checks["jobs not pending (held)"] = "SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair' AND (args->>'outbox_id')::bigint IN (SELECT id FROM outbox WHERE (payload->>'payment_id')::bigint = ANY($1)) AND state <> 'pending'"
	}
	for what, sql := range checks {
		if n := pgtest.Count(t, b.pool, sql, rs.payments); n != 0 {
			t.Errorf("%s: %d, want 0", what, n)
		}
	}
}

// Held commands are never applied before an approval, however long the
// relay runs: a command queued normally after them is applied (the workers
// are live and fetching), the periodic adopt pass leaves them alone, a
// drain ends with them still held; then approval applies each exactly once.
func TestHeldRepairsWaitForApproval(t *testing.T) {
	t.Parallel()
	const n = 20
	b := setup(t, testConfig(t))
	installAudit(t, b.pool)
	ctx := context.Background()
	held := b.holdRepairs(t, n)
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	sentinel := b.seedRepairs(t, 1, true)
	testkit.WaitFor(t, "the sentinel command to be applied", 30*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL", sentinel.outbox[0]) == 1
	})
	if adopted, err := b.relay.EnqueueUnprocessed(ctx); err != nil || adopted != 0 {
		t.Fatalf("the adopt pass queued %d held commands (%v); want 0", adopted, err)
	}
	if dropped, err := b.relay.DropHealed(ctx); err != nil || len(dropped) != 0 {
		t.Fatalf("DropHealed dropped %v (%v); the findings are open", dropped, err)
	}
	if err := b.relay.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 0 {
		t.Errorf("a drain applied %d commands; all are held", rep.Applied)
	}
	untouched(t, b, held, true)
	listed, err := postgres.NewMonitor(b.pool).HeldRepairs(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != n || listed[0].OutboxID != held.outbox[0] || listed[0].Kind != payrecon.KindMissedSuccess ||
		listed[0].Command != payrecon.ApplyPaymentSucceeded || listed[0].Status != "pending" {
		t.Fatalf("held repairs listed: %d, first %+v; want %d, the first outbox %d", len(listed), listed[0], n, held.outbox[0])
	}

	ar, err := b.relay.Approve(ctx, held.outbox[:5], false, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Approved) != 5 || len(ar.Dropped) != 0 || len(ar.NotHeld) != 0 {
		t.Fatalf("approve 5: %+v", ar)
	}
	again, err := b.relay.Approve(ctx, held.outbox[:1], false, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Approved) != 0 || !slices.Equal(again.NotHeld, held.outbox[:1]) {
		t.Fatalf("approving an approved command again: %+v; want it reported not held", again)
	}
	if _, err := b.relay.Approve(ctx, nil, true, "carol"); err != nil {
		t.Fatal(err)
	}
	if rep, err = b.relay.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if rep.Applied != n {
		t.Errorf("the drain after approval applied %d, want %d: %+v", rep.Applied, n, rep)
	}
	checkAppliedOnce(t, b.pool, n+1)
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = ANY($1) AND approved_by = 'alice'", held.outbox[:5]); got != 5 {
		t.Errorf("approved by alice: %d, want 5", got)
	}
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = ANY($1) AND approved_by = 'carol' AND approved_at IS NOT NULL", held.outbox[5:]); got != n-5 {
		t.Errorf("approved by carol: %d, want %d", got, n-5)
	}
}

// A held command whose finding healed before the approval is dropped, never
// applied: by the approval itself, and by the periodic pass. One approved
// and then healed before a worker took it is skipped by the worker.
func TestHeldRepairOfHealedFindingIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	rs := b.holdRepairs(t, 4)
	heal := func(i int) {
		pgtest.Exec(t, b.pool, `UPDATE reconciliation_findings SET resolved_at = now(), resolution = 'healed', resolved_by = 'sweep:test'
			WHERE id = $1`, rs.findings[i])
	}
	heal(0)
	heal(1)
	ar, err := b.relay.Approve(ctx, rs.outbox[:1], false, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Approved) != 0 || len(ar.Dropped) != 1 || !strings.Contains(ar.Dropped[0].Dropped, "healed") {
		t.Fatalf("approving a command whose finding healed: %+v; want it dropped", ar)
	}
	dropped, err := b.relay.DropHealed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 1 || dropped[0].OutboxID != rs.outbox[1] {
		t.Fatalf("DropHealed: %+v; want outbox %d", dropped, rs.outbox[1])
	}
	// Approved while open, healed before any worker ran.
	if ar, err = b.relay.Approve(ctx, rs.outbox[2:3], false, "alice"); err != nil || len(ar.Approved) != 1 {
		t.Fatalf("approve: %+v, %v", ar, err)
	}
	heal(2)
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 0 || rep.Unapplied != 1 {
		t.Errorf("drain: %+v; want one command skipped (its finding healed), none applied", rep)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE id = ANY($1) AND status <> 'pending'", rs.payments[:3]); n != 0 {
		t.Errorf("%d payments whose finding healed were moved", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions"); n != 0 {
		t.Errorf("%d transitions written", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = ANY($1) AND outcome LIKE 'dropped: finding % was healed before an approval'", rs.outbox[:2]); n != 2 {
		t.Errorf("dropped outcomes recorded: %d, want 2", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE (args->>'outbox_id')::bigint = ANY($1)", rs.outbox[:2]); n != 0 {
		t.Errorf("the dropped commands' jobs: %d left, want 0 (deleted)", n)
	}
	if d, err := b.relay.Delivery(ctx, rs.outbox[0]); err != nil || d.State != relay.DeliveryDropped {
		t.Errorf("delivery of a dropped command: %+v, %v; want %s", d, err, relay.DeliveryDropped)
	}
	if d, err := b.relay.Delivery(ctx, rs.outbox[3]); err != nil || d.State != relay.DeliveryHeld {
		t.Errorf("delivery of a held command: %+v, %v; want %s", d, err, relay.DeliveryHeld)
	}
	untouched(t, b, repairs{payments: rs.payments[3:]}, true)
}

// A held job made available without an approval (River's dashboard, or a
// client calling JobRetry) is not applied: the worker cancels it and the
// command stays held; relay --retry refuses it outright. Approval then
// applies it once.
func TestHeldRepairBypassingApprovalIsNotApplied(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	installAudit(t, b.pool)
	ctx := context.Background()
	rs := b.holdRepairs(t, 1)
	var jobID int64
	if err := b.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE (args->>'outbox_id')::bigint = $1", rs.outbox[0]).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.relay.Retry(ctx, jobID); !errors.Is(err, relay.ErrNotRetryable) {
		t.Fatalf("relay --retry of a held job: %v; want ErrNotRetryable", err)
	}
	client, err := river.NewClient(riverpgxv5.New(b.pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.JobRetry(ctx, jobID); err != nil {
		t.Fatal(err)
	}
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 0 {
		t.Fatalf("a held job retried without approval was applied: %+v", rep)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE id = $1 AND state = 'cancelled'", jobID); n != 1 {
		t.Errorf("the bypassing job is not cancelled")
	}
	untouched(t, b, repairs{payments: rs.payments}, false)
	if held, err := postgres.NewMonitor(b.pool).HeldRepairs(ctx, 10); err != nil || len(held) != 1 {
		t.Fatalf("held after the bypass: %v, %v; want the command still held", held, err)
	}
	if ar, err := b.relay.Approve(ctx, rs.outbox, false, "alice"); err != nil || len(ar.Approved) != 1 {
		t.Fatalf("approve: %+v, %v", ar, err)
	}
	if rep, err = b.relay.Drain(ctx); err != nil || rep.Applied != 1 {
		t.Fatalf("drain after approval: %+v, %v", rep, err)
	}
	checkAppliedOnce(t, b.pool, 1)
}

// Two replicas (two relays, each with its own pool and River client,
// running at once) and two operators approving the same commands at the
// same moment: each command is approved once, by one of them, and applied
// exactly once.
func TestApprovalAppliesOnceUnderTwoReplicas(t *testing.T) {
	t.Parallel()
	const n = 300
	b := setup(t, testConfig(t))
	installAudit(t, b.pool)
	pgtest.Exec(t, b.pool, `
		CREATE TABLE test_approved (outbox_id bigint NOT NULL, by text NOT NULL);
		CREATE FUNCTION test_approved() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    IF OLD.approved_at IS NULL AND NEW.approved_at IS NOT NULL THEN
		        INSERT INTO test_approved VALUES (NEW.id, NEW.approved_by);
		    END IF;
		    RETURN NEW;
		END $$;
		CREATE TRIGGER test_approved AFTER UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION test_approved();`)
	ctx := context.Background()
	rs := b.holdRepairs(t, n)
	second, err := relay.New(newPool(t, b.url, 15), postgres.NewWriter(nil), testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := second.Stop(context.WithoutCancel(ctx)); err != nil {
			t.Error(err)
		}
	})
	for _, r := range []*relay.Relay{b.relay, second} {
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		reps  [2]relay.ApproveReport
		errs  [2]error
	)
	reversed := slices.Clone(rs.outbox)
	slices.Reverse(reversed)
	wg.Go(func() { <-start; reps[0], errs[0] = b.relay.Approve(ctx, nil, true, "alice") })
	wg.Go(func() { <-start; reps[1], errs[1] = second.Approve(ctx, reversed, false, "bob") })
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("approver %d: %v", i, err)
		}
	}
	if got := len(reps[0].Approved) + len(reps[1].Approved); got != n {
		t.Errorf("approved %d + %d commands, want %d in all", len(reps[0].Approved), len(reps[1].Approved), n)
	}
	testkit.WaitFor(t, "every approved command to be applied", 2*time.Minute, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE processed_at IS NOT NULL") == n
	})
	checkAppliedOnce(t, b.pool, n)
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM (SELECT outbox_id FROM test_approved GROUP BY outbox_id HAVING count(*) = 1) x"); got != n {
		t.Errorf("commands approved exactly once: %d, want %d", got, n)
	}
	t.Logf("alice approved %d, bob %d", len(reps[0].Approved), len(reps[1].Approved))
}

// Approving more ids than one settling transaction takes approves them all.
func TestApproveManyIDs(t *testing.T) {
	t.Parallel()
	const n = 510
	cfg := testConfig(t)
	cfg.InsertOnly = true
	b := setup(t, cfg)
	rs := b.holdRepairs(t, n)
	ar, err := b.relay.Approve(context.Background(), rs.outbox, false, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(ar.Approved) != n || len(ar.NotHeld) != 0 {
		t.Fatalf("approved %d of %d (%d not held)", len(ar.Approved), n, len(ar.NotHeld))
	}
	if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'available'", relay.Kind); got != n {
		t.Errorf("%d jobs made available, want %d", got, n)
	}
}
