package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t) // already migrated from the template
	ctx := context.Background()
	applied, err := postgres.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(applied) != 0 {
		t.Errorf("second migrate applied %v, want nothing", applied)
	}
	if err := postgres.CheckMigrations(ctx, pool); err != nil {
		t.Errorf("CheckMigrations after migrate: %v", err)
	}
	for _, table := range []string{"payments", "reconciliation_cursor", "reconciliation_findings", "outbox", "river_job", "reconciliation_recheck"} {
		if n := pgtest.Count(t, pool, "SELECT count(*) FROM information_schema.tables WHERE table_name = $1", table); n != 1 {
			t.Errorf("table %s missing", table)
		}
	}
}

// Migrating an empty database from several processes (pools) at once must
// not fail: goose's session lock serialises them.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.NewURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Start from nothing: drop what the template brought.
	pgtest.Exec(t, pool, "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := pgxpool.New(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer p.Close()
			_, errs[i] = postgres.Migrate(ctx, p, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("concurrent migrate: %v", err)
		}
	}
	if err := postgres.CheckMigrations(ctx, pool); err != nil {
		t.Errorf("after concurrent migrate: %v", err)
	}
}

// The application's existing INSERTs, which know nothing of payrecon's
// columns, keep working.
func TestApplicationInsertStillWorks(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	pgtest.Exec(t, pool, "INSERT INTO payments (order_id, stripe_payment_intent_id, status) VALUES ('o1', 'pi_1', 'pending')")
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_findings (payment_id, kind, local_status, external_status)
		SELECT id, 'missed_success', 'pending', 'succeeded' FROM payments`)
	pgtest.Exec(t, pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Payment', '1', 'ApplyPaymentSucceeded', '{"payment_id": 1}')`)
}

// The lag comes from payrecon's own tables once a cycle has completed: the
// plan has no scan of payments (no index covers last_reconciled_at since
// 00015, so that verifications are HOT updates), and the value is the
// cycle's start or the oldest row still queued for recheck. With no sweep
// job yet it is exact, from every row.
func TestLagQueryReadsPayreconsTables(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	pgtest.Exec(t, pool, `INSERT INTO payments (order_id, stripe_payment_intent_id, status, created_at, last_reconciled_at)
		SELECT 'o'||g, 'pi_'||g, 'paid', now() - interval '1 day', CASE WHEN g % 2 = 0 THEN now() - (g || ' seconds')::interval END
		  FROM generate_series(1, 20000) g`)
	pgtest.Exec(t, pool, "ANALYZE payments")
	m := postgres.NewMonitor(pool)
	lagNow := func() time.Duration {
		t.Helper()
		lag, ok, err := m.Lag(ctx, time.Now())
		if err != nil || !ok {
			t.Fatalf("Lag: %v %v", ok, err)
		}
		return lag
	}
	// No sweep yet: odd rows were never verified; their created_at, a day
	// ago, is the oldest.
	if lag := lagNow(); lag < 23*time.Hour || lag > 25*time.Hour {
		t.Errorf("lag with no sweep job = %s, want about 24h", lag)
	}
	// A full job whose last cycle began two hours ago and whose cursor is
	// half-way (a recent-window job, newer, does not count), and a row it
	// could not verify, queued, last verified three hours ago.
	pgtest.Exec(t, pool, `UPDATE payments SET last_reconciled_at = now() - interval '90 minutes'`)
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_cursor (job, last_id, cycle_started_at, last_cycle_started_at, last_cycle_completed_at)
		VALUES ('payments-vs-stripe', 10000, now() - interval '30 minutes', now() - interval '2 hours', now() - interval '30 minutes'),
		       ('payments-vs-stripe/recent', 0, now(), now() - interval '1 minute', now())`)
	// The pages the query touches (the table has about 200): a handful.
	var plan []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	var raw []byte
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for range 2 { // the second run: the session's catalog caches are warm
		if err := conn.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+postgres.Queries.Get("lag"),
			pgx.StrictNamedArgs{"recent_suffix": payrecon.RecentJobSuffix}).Scan(&raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := json.Unmarshal(raw, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan: %v %s", err, raw)
	}
	if pages := plan[0].Plan.Hit + plan[0].Plan.Read; pages > 30 {
		t.Errorf("the lag query touched %d pages; want a few (no scan of payments):\n%s", pages, raw)
	}
	if lag := lagNow(); lag < 119*time.Minute || lag > 121*time.Minute {
		t.Errorf("lag = %s, want the last cycle's start, 2h ago", lag)
	}
	pgtest.Exec(t, pool, `UPDATE payments SET last_reconciled_at = now() - interval '3 hours' WHERE id = 15000`)
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_recheck (job, payment_id, reason, due_at) VALUES ('payments-vs-stripe', 15000, 'unverifiable', now())`)
	if lag := lagNow(); lag < 179*time.Minute || lag > 181*time.Minute {
		t.Errorf("lag = %s, want the queued row's last verification, 3h ago", lag)
	}
	// A row queued by the sweep since 00015 carries its last verification
	// in the queue (verified_before): no lookup in payments.
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_recheck (job, payment_id, reason, due_at, verified_before)
		VALUES ('payments-vs-stripe', 16000, 'unverifiable', now(), now() - interval '4 hours')`)
	if lag := lagNow(); lag < 239*time.Minute || lag > 241*time.Minute {
		t.Errorf("lag = %s, want the queue's verified_before, 4h ago", lag)
	}
}

func TestLagEmptyTable(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	_, ok, err := postgres.NewMonitor(pool).Lag(context.Background(), time.Now())
	if err != nil || ok {
		t.Errorf("Lag on empty table = ok %v, err %v; want not ok", ok, err)
	}
}

func insertOne(t *testing.T, pool *pgxpool.Pool, status payrecon.LocalStatus) int64 {
	t.Helper()
	return pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: fmt.Sprintf("pi_%d", time.Now().UnixNano()), Status: status}})[0]
}

func apply(t *testing.T, pool *pgxpool.Pool, w *postgres.Writer, cmd payrecon.Command, ref postgres.PaymentRef) postgres.ApplyResult {
	t.Helper()
	var res postgres.ApplyResult
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		res, err = w.Apply(context.Background(), tx, cmd, ref)
		return err
	})
	if err != nil {
		t.Fatalf("apply %s: %v", cmd, err)
	}
	return res
}

func TestWriterTransitions(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	w := postgres.NewWriter(fixedClock{now})

	id := insertOne(t, pool, payrecon.StatusPending)
	res := apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id})
	if res.Outcome != payrecon.Applied || res.Before != payrecon.StatusPending || res.After != payrecon.StatusPaid || res.Version != 1 {
		t.Errorf("first apply = %+v", res)
	}
	var updated time.Time
	if err := pool.QueryRow(context.Background(), "SELECT updated_at FROM payments WHERE id = $1", id).Scan(&updated); err != nil || !updated.Equal(now) {
		t.Errorf("updated_at = %v (%v), want the writer's clock %v", updated, err, now)
	}
	if res := apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id}); res.Outcome != payrecon.AlreadyInTarget {
		t.Errorf("second apply = %+v, want already_in_target", res)
	}
	// A late payment_failed never moves a paid payment backwards.
	if res := apply(t, pool, w, payrecon.ApplyPaymentFailed, postgres.PaymentRef{ID: id}); res.Outcome != payrecon.MovedElsewhere || res.After != payrecon.StatusPaid {
		t.Errorf("late failure = %+v, want moved_elsewhere leaving paid", res)
	}
	if v := pgtest.Count(t, pool, "SELECT version FROM payments WHERE id = $1", id); v != 1 {
		t.Errorf("version = %d after one real transition, want 1", v)
	}
	if res := apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: 999999}); res.Outcome != payrecon.PaymentMissing {
		t.Errorf("missing payment = %+v", res)
	}
	var intent string
	_ = pool.QueryRow(context.Background(), "SELECT stripe_payment_intent_id FROM payments WHERE id = $1", id).Scan(&intent)
	if res := apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{IntentID: intent}); res.PaymentID != id || res.Outcome != payrecon.AlreadyInTarget {
		t.Errorf("apply by intent id = %+v", res)
	}
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		_, err := w.Apply(context.Background(), tx, "RefundEverything", postgres.PaymentRef{ID: id})
		return err
	})
	if !errors.Is(err, postgres.ErrUnknownCommand) {
		t.Errorf("unknown command error = %v", err)
	}
}

// 50 goroutines apply the same repair at once: one transition, version + 1.
func TestWriterConcurrentApplyOneTransition(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	w := postgres.NewWriter(nil)
	id := insertOne(t, pool, payrecon.StatusPending)
	var wg sync.WaitGroup
	outcomes := make([]payrecon.Outcome, 50)
	errs := make([]error, 50)
	start := make(chan struct{})
	for i := range outcomes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
				res, err := w.Apply(context.Background(), tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id})
				outcomes[i] = res.Outcome
				return err
			})
		}()
	}
	close(start)
	wg.Wait()
	applied := 0
	for i := range outcomes {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		switch outcomes[i] {
		case payrecon.Applied:
			applied++
		case payrecon.AlreadyInTarget:
		default:
			t.Errorf("goroutine %d: outcome %s", i, outcomes[i])
		}
	}
	if applied != 1 {
		t.Errorf("%d goroutines applied the transition, want exactly 1", applied)
	}
	if v := pgtest.Count(t, pool, "SELECT version FROM payments WHERE id = $1", id); v != 1 {
		t.Errorf("version = %d, want 1", v)
	}
}

// seedRepair creates a pending payment with an open missed_success finding
// and its outbox command, as the sweep would.
func seedRepair(t *testing.T, pool *pgxpool.Pool, cmd payrecon.Command) (paymentID, findingID, outboxID int64) {
	t.Helper()
	ctx := context.Background()
	paymentID = insertOne(t, pool, payrecon.StatusPending)
	kind := payrecon.KindMissedSuccess
	if cmd == payrecon.ApplyPaymentCanceled {
		kind = payrecon.KindMissedCancel
	}
	if err := pool.QueryRow(ctx, `INSERT INTO reconciliation_findings (payment_id, kind, local_status, external_status, verdict, repair_command)
		VALUES ($1, $2, 'pending', 'succeeded', 'repairable', $3) RETURNING id`, paymentID, string(kind), string(cmd)).Scan(&findingID); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('Payment', $4, $2, jsonb_build_object('payment_id', $1::bigint, 'finding_id', $3::bigint)) RETURNING id`,
		paymentID, string(cmd), findingID, fmt.Sprint(paymentID)).Scan(&outboxID); err != nil {
		t.Fatal(err)
	}
	return paymentID, findingID, outboxID
}

func applyRepair(t *testing.T, pool *pgxpool.Pool, w *postgres.Writer, outboxID int64) (postgres.RepairResult, error) {
	t.Helper()
	var res postgres.RepairResult
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		var err error
		res, err = w.ApplyRepair(context.Background(), tx, outboxID)
		return err
	})
	return res, err
}

func TestRepairResolvesFindingWhenTargetReached(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	w := postgres.NewWriter(nil)
	pid, fid, oid := seedRepair(t, pool, payrecon.ApplyPaymentSucceeded)
	res, err := applyRepair(t, pool, w, oid)
	if err != nil || !res.Resolved || res.Apply.Outcome != payrecon.Applied {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if s := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid' AND version = 1", pid); s != 1 {
		t.Error("payment not paid with version 1")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'repaired' AND resolved_at IS NOT NULL", fid); n != 1 {
		t.Error("finding not resolved as repaired")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL AND outcome = 'applied'", oid); n != 1 {
		t.Error("outbox row not marked processed")
	}
	// Applying the same command again does nothing.
	res, err = applyRepair(t, pool, w, oid)
	if err != nil || !res.AlreadyProcessed {
		t.Errorf("second apply = %+v, %v; want already processed", res, err)
	}
	if v := pgtest.Count(t, pool, "SELECT version FROM payments WHERE id = $1", pid); v != 1 {
		t.Errorf("version = %d after a repeated command", v)
	}
}

// Design item 1: a webhook marked the payment failed before the
// ApplyPaymentSucceeded repair ran. The finding must stay open, with the
// reason, because the drift still stands.
func TestRepairThatFindsPaymentMovedElsewhereLeavesFindingOpen(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	w := postgres.NewWriter(nil)
	pid, fid, oid := seedRepair(t, pool, payrecon.ApplyPaymentSucceeded)
	if r := apply(t, pool, w, payrecon.ApplyPaymentFailed, postgres.PaymentRef{ID: pid}); r.Outcome != payrecon.Applied {
		t.Fatalf("webhook failure = %+v", r)
	}
	res, err := applyRepair(t, pool, w, oid)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resolved || res.Apply.Outcome != payrecon.MovedElsewhere {
		t.Errorf("repair = %+v; want moved_elsewhere, not resolved", res)
	}
	var resolved *time.Time
	var outcome *string
	if err := pool.QueryRow(context.Background(), "SELECT resolved_at, repair_outcome FROM reconciliation_findings WHERE id = $1", fid).Scan(&resolved, &outcome); err != nil {
		t.Fatal(err)
	}
	if resolved != nil {
		t.Error("finding resolved while the drift stands")
	}
	if outcome == nil || !strings.Contains(*outcome, "failed") {
		t.Errorf("repair_outcome = %v, want the reason naming the payment's state", outcome)
	}
	if s := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'failed'", pid); s != 1 {
		t.Error("repair moved a failed payment")
	}
}

func TestRepairWhenWebhookGotThereFirst(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	w := postgres.NewWriter(nil)
	pid, fid, oid := seedRepair(t, pool, payrecon.ApplyPaymentSucceeded)
	apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: pid})
	res, err := applyRepair(t, pool, w, oid)
	if err != nil || !res.Resolved || res.Apply.Outcome != payrecon.AlreadyInTarget {
		t.Fatalf("repair = %+v, %v", res, err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'already_in_target'", fid); n != 1 {
		t.Error("finding not resolved as already_in_target")
	}
	if v := pgtest.Count(t, pool, "SELECT version FROM payments WHERE id = $1", pid); v != 1 {
		t.Errorf("version = %d, want 1", v)
	}
}

func TestRepairInvalidCommands(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	w := postgres.NewWriter(nil)
	ctx := context.Background()
	pid := insertOne(t, pool, payrecon.StatusPending)
	for name, c := range map[string]struct{ event, payload string }{
		"unknown event type": {"RefundEverything", fmt.Sprintf(`{"payment_id": %d}`, pid)},
		"no payment id":      {"ApplyPaymentSucceeded", `{"finding_id": 1}`},
		"wrong json shape":   {"ApplyPaymentSucceeded", `{"payment_id": "abc"}`},
		"missing finding":    {"ApplyPaymentSucceeded", fmt.Sprintf(`{"payment_id": %d, "finding_id": 987654}`, pid)},
	} {
		var oid int64
		if err := pool.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload) VALUES ('Payment', '1', $1, $2::jsonb) RETURNING id`,
			c.event, c.payload).Scan(&oid); err != nil {
			t.Fatal(err)
		}
		_, err := applyRepair(t, pool, w, oid)
		var inv *postgres.InvalidCommandError
		if !errors.As(err, &inv) {
			t.Errorf("%s: err = %v, want InvalidCommandError", name, err)
		}
	}
	if v := pgtest.Count(t, pool, "SELECT version FROM payments WHERE id = $1", pid); v != 0 {
		t.Errorf("an invalid command changed the payment (version %d)", v)
	}
}

func TestLease(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	l1, err := postgres.AcquireLease(ctx, pool, "job-a", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = postgres.AcquireLease(ctx, pool, "job-a", false)
	var held *postgres.LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, payrecon.ErrLeaseHeld) {
		t.Fatalf("second acquire err = %v, want LeaseHeldError", err)
	}
	if held.Holder == nil || held.Holder.PID == 0 {
		t.Errorf("holder not identified: %+v", held.Holder)
	}
	// Another job is independent.
	l2, err := postgres.AcquireLease(ctx, pool, "job-b", false)
	if err != nil {
		t.Fatalf("other job: %v", err)
	}
	defer l2.Release(ctx) //nolint:errcheck
	// A waiter gets the lease as soon as the holder lets go.
	got := make(chan error, 1)
	go func() {
		l, err := postgres.AcquireLease(ctx, pool, "job-a", true)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("waiter returned while the lease was held: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := l1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter never got the lease")
	}
}
