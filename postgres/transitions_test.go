package postgres_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// The transition row and the status change are one fact: a transaction
// that rolls back (by the caller, by a hook's error, or because its
// connection died before COMMIT) leaves neither; one that commits leaves
// both, with what the hook saw.
func TestTransitionRowCommitsWithTheStatus(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	w := postgres.NewWriter(fixedClock{now})
	hookErr := errors.New("the shop is closed")
	var seen []payrecon.PaymentTransition
	failing := map[int64]bool{}
	w.OnTransition(func(ctx context.Context, tx pgx.Tx, tr payrecon.PaymentTransition) error {
		// The hook runs in the writer's transaction: it sees the new row.
		if n := 0; tx.QueryRow(ctx, "SELECT count(*) FROM payment_transitions WHERE id = $1", tr.ID).Scan(&n) != nil || n != 1 {
			return errors.New("hook does not see the transition row")
		}
		if failing[tr.PaymentID] {
			return hookErr
		}
		seen = append(seen, tr)
		return nil
	})
	state := func(id int64) (payrecon.LocalStatus, int) {
		var s payrecon.LocalStatus
		if err := pool.QueryRow(ctx, "SELECT status FROM payments WHERE id = $1", id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s, pgtest.Count(t, pool, "SELECT count(*) FROM payment_transitions WHERE payment_id = $1", id)
	}

	// Rolled back by the caller.
	rolled := insertOne(t, pool, payrecon.StatusPending)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: rolled}); err != nil || res.Transition.ID == 0 {
		t.Fatalf("apply = %+v, %v", res, err)
	}
	_ = tx.Rollback(ctx)
	if s, n := state(rolled); s != payrecon.StatusPending || n != 0 {
		t.Errorf("after rollback: %s with %d transition rows, want pending with none", s, n)
	}

	// The hook's error rolls the transition back.
	hooked := insertOne(t, pool, payrecon.StatusPending)
	failing[hooked] = true
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: hooked})
		return err
	})
	if !errors.Is(err, hookErr) {
		t.Errorf("apply with a failing hook = %v, want the hook's error", err)
	}
	if s, n := state(hooked); s != payrecon.StatusPending || n != 0 {
		t.Errorf("after the hook failed: %s with %d transition rows, want pending with none", s, n)
	}

	// The connection dies between the statement and COMMIT (the process
	// killed mid-apply).
	killed := insertOne(t, pool, payrecon.StatusPending)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: killed}); err != nil {
		t.Fatal(err)
	}
	pid := conn.Conn().PgConn().PID()
	pgtest.Exec(t, pool, "SELECT pg_terminate_backend($1)", pid)
	if err := tx.Commit(ctx); err == nil {
		t.Error("commit on a terminated connection succeeded")
	}
	conn.Release()
	if s, n := state(killed); s != payrecon.StatusPending || n != 0 {
		t.Errorf("after the connection died: %s with %d transition rows, want pending with none", s, n)
	}

	// Committed: both, and the hook saw the row as stored. (It saw the
	// rolled-back ones too: a hook's effect must live in the transaction.)
	seen = nil
	ok := insertOne(t, pool, payrecon.StatusPending)
	res := apply(t, pool, w, payrecon.ApplyPaymentCanceled, postgres.PaymentRef{ID: ok})
	if s, n := state(ok); s != payrecon.StatusFailed || n != 1 {
		t.Fatalf("after commit: %s with %d transition rows, want failed with one", s, n)
	}
	want := payrecon.PaymentTransition{ID: res.Transition.ID, PaymentID: ok, From: payrecon.StatusPending, To: payrecon.StatusFailed,
		Version: 1, Source: payrecon.SourceManual, OccurredAt: now}
	var got payrecon.PaymentTransition
	var ref *string
	if err := pool.QueryRow(ctx, `SELECT id, payment_id, from_status, to_status, version, source, source_ref, occurred_at
		FROM payment_transitions WHERE payment_id = $1`, ok).Scan(&got.ID, &got.PaymentID, &got.From, &got.To, &got.Version,
		&got.Source, &ref, &got.OccurredAt); err != nil {
		t.Fatal(err)
	}
	got.OccurredAt = got.OccurredAt.UTC()
	if got != want || ref != nil {
		t.Errorf("row = %+v (ref %v), want %+v", got, ref, want)
	}
	if len(seen) != 1 || seen[0] != want {
		t.Errorf("the hook saw %+v, want [%+v]", seen, want)
	}

	// A no-op writes nothing and calls no hook.
	if res := apply(t, pool, w, payrecon.ApplyPaymentCanceled, postgres.PaymentRef{ID: ok}); res.Outcome != payrecon.AlreadyInTarget || res.Transition.ID != 0 {
		t.Errorf("repeat = %+v, want already_in_target with no transition", res)
	}
	if _, n := state(ok); n != 1 || len(seen) != 1 {
		t.Errorf("after a no-op: %d rows, hook called %d times; want 1 and 1", n, len(seen))
	}
}

// The events catch-up's road records source "events" and the event id.
func TestEventsWithSourceRecordsTheRoad(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_caught", Status: payrecon.StatusPending}})
	ev := payrecon.Event{ID: "evt_caught", Type: payrecon.EventPaymentIntentSucceeded,
		Object: payrecon.EventObject{ID: "pi_caught", Object: "payment_intent"}}
	if _, err := postgres.NewEvents(pool, postgres.NewWriter(nil), nil).WithSource(payrecon.SourceEvents).ProcessEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	var source, ref string
	if err := pool.QueryRow(ctx, "SELECT source, source_ref FROM payment_transitions WHERE payment_id = $1", ids[0]).Scan(&source, &ref); err != nil {
		t.Fatal(err)
	}
	if source != "events" || ref != "evt_caught" {
		t.Errorf("transition recorded %s/%s, want events/evt_caught", source, ref)
	}
}

// pg_notify('payrecon_transitions', id) fires at commit, unless the
// setting payrecon.transition_notify is off for that transaction.
func TestTransitionNotifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	listener, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Release()
	if _, err := listener.Exec(ctx, "LISTEN payrecon_transitions"); err != nil {
		t.Fatal(err)
	}
	w := postgres.NewWriter(nil)
	quiet := insertOne(t, pool, payrecon.StatusPending)
	loud := insertOne(t, pool, payrecon.StatusPending)
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL payrecon.transition_notify = off"); err != nil {
			return err
		}
		_, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: quiet})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res := apply(t, pool, w, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: loud})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := listener.Conn().WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	// Notifications arrive in commit order: the first is the loud one's.
	if n.Channel != "payrecon_transitions" || n.Payload != strconv.FormatInt(res.Transition.ID, 10) {
		t.Errorf("notification %s %q, want payrecon_transitions %d", n.Channel, n.Payload, res.Transition.ID)
	}
}
