package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// Fencing at the store: once a standby has taken the lease over from a
// holder whose heartbeat went silent, the old holder's batch commit, wrap
// and events cursor advance write nothing (ErrLeaseLost), its Alive says
// so after its next heartbeat, and the new holder's commits go through. A
// takeover waits for a commit in progress (the row is held FOR SHARE).
func TestLeaseFencing(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	ctx := context.Background()
	id := insertOne(t, pool, payrecon.StatusPaid)
	const job = "fenced"
	old, err := postgres.AcquireLeaseTimeout(ctx, pool, job, false, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Release(ctx) //nolint:errcheck
	// A standby with a generous timeout does not take a live lease.
	if _, err := postgres.AcquireLeaseTimeout(ctx, pool, job, false, time.Minute); !errors.Is(err, payrecon.ErrLeaseHeld) {
		t.Fatalf("standby on a live lease: %v, want ErrLeaseHeld", err)
	}
	// The holder freezes: its heartbeat is a minute old.
	pgtest.Exec(t, pool, "UPDATE payrecon_leases SET heartbeat_at = now() - interval '1 minute' WHERE job = $1", job)
	standby, err := postgres.AcquireLeaseTimeout(ctx, pool, job, false, 30*time.Second)
	if err != nil {
		t.Fatalf("standby after a minute of silence: %v", err)
	}
	defer standby.Release(ctx) //nolint:errcheck
	if standby.Epoch() != old.Epoch()+1 {
		t.Errorf("epochs %d then %d, want consecutive", old.Epoch(), standby.Epoch())
	}
	if h, err := postgres.LeaseHolderOf(ctx, pool, job); err != nil || h == nil || h.Epoch != standby.Epoch() {
		t.Errorf("holder = %+v, %v; want the standby's epoch", h, err)
	}

	store := postgres.NewStore(pool)
	if _, _, _, err := store.ReadBatch(ctx, job, 10, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	commit := func(fence int64) error {
		_, err := store.CommitBatch(ctx, payrecon.BatchCommit{Job: job, From: 0, To: id, Advance: true, Fence: fence, Now: time.Now(),
			Checks: []payrecon.Check{{Row: payrecon.PaymentRow{ID: id, IntentID: "x", Status: payrecon.StatusPaid},
				Observed: payrecon.IntentSucceeded, ReadAt: time.Now(), Decision: payrecon.Classify(payrecon.StatusPaid, payrecon.IntentSucceeded)}}})
		return err
	}
	if err := commit(old.Epoch()); !errors.Is(err, payrecon.ErrLeaseLost) {
		t.Fatalf("the old holder's commit: %v, want ErrLeaseLost", err)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
		t.Error("the old holder's commit verified a row")
	}
	if err := store.Wrap(ctx, job, 0, old.Epoch(), time.Now()); !errors.Is(err, payrecon.ErrLeaseLost) {
		t.Errorf("the old holder's wrap: %v, want ErrLeaseLost", err)
	}
	cursors := postgres.NewEventCursors(pool)
	if _, err := cursors.ReadEventCursor(ctx, job, time.Now().Add(-time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	adv := payrecon.EventAdvance{Job: job, To: "evt_1", ToCreated: time.Now(), Outcome: "applied", Now: time.Now(), Fence: old.Epoch()}
	if err := cursors.AdvanceEventCursor(ctx, adv); !errors.Is(err, payrecon.ErrLeaseLost) {
		t.Errorf("the old holder's events advance: %v, want ErrLeaseLost", err)
	}
	adv.Fence = standby.Epoch()
	if err := cursors.AdvanceEventCursor(ctx, adv); err != nil {
		t.Errorf("the new holder's events advance: %v", err)
	}
	if err := commit(standby.Epoch()); err != nil {
		t.Fatalf("the new holder's commit: %v", err)
	}
	// The old holder's next heartbeat (every second here) finds the new epoch.
	deadline := time.Now().Add(30 * time.Second)
	for old.Alive(ctx) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if err := old.Alive(ctx); !errors.Is(err, payrecon.ErrLeaseLost) {
		t.Errorf("the old holder's Alive = %v, want ErrLeaseLost", err)
	}

	// A takeover waits for a commit in progress: while a transaction holds
	// the fence (the row FOR SHARE), a taker of the (now silent) lease
	// blocks, and gets it once that transaction ends.
	pgtest.Exec(t, pool, "UPDATE payrecon_leases SET heartbeat_at = now() - interval '1 minute' WHERE job = $1", job)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var epoch int64
	if err := tx.QueryRow(ctx, postgres.Queries.Get("lease_fence"), pgx.StrictNamedArgs{"job": job}).Scan(&epoch); err != nil || epoch != standby.Epoch() {
		t.Fatalf("fence = %d, %v; want %d", epoch, err, standby.Epoch())
	}
	took := make(chan error, 1)
	go func() {
		l, err := postgres.AcquireLeaseTimeout(ctx, pool, job, false, 30*time.Second)
		if err == nil {
			defer l.Release(ctx) //nolint:errcheck
		}
		took <- err
	}()
	select {
	case err := <-took:
		t.Fatalf("takeover during a commit in progress returned at once: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-took:
		if err != nil {
			t.Errorf("takeover after the commit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("takeover still blocked after the commit")
	}
}
