package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

type sessionEventsBundle struct {
	pool   *pgxpool.Pool
	sim    *stripesim.Server
	gw     *stripeapi.Gateway
	events *postgres.Events
	store  *postgres.Store
}

// setupSessionEvents: a payments table on Checkout Sessions (the session
// column, the PaymentIntent id nullable), the simulator, and the event
// store that matches checkout.session.* events by session id.
func setupSessionEvents(t *testing.T) *sessionEventsBundle {
	t.Helper()
	pool := pgtest.NewDB(t)
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text")
	pgtest.Exec(t, pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	sc, err := postgres.DetectSessionColumn(context.Background(), pool, postgres.SessionColumnDefault)
	if err != nil || !sc.Found {
		t.Fatalf("session column: %+v %v", sc, err)
	}
	sim := simtest.Start(t, stripesim.Config{Seed: 3})
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: sim.SecretKey(), APIBase: sim.URL(), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	events := postgres.NewEvents(pool, postgres.NewWriter(nil), nil)
	events.Sessions = sc
	return &sessionEventsBundle{pool: pool, sim: sim, gw: gw, events: events, store: postgres.NewStore(pool).WithSessionColumn(sc)}
}

// sessionRow inserts a pending session row (created an hour ago, outside
// the grace window) and its open session.
func (b *sessionEventsBundle) sessionRow(t *testing.T, session string) int64 {
	t.Helper()
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	if _, err := b.sim.CreateSession(stripesim.Session{ID: session, Created: at}); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := b.pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_checkout_session_id, status, created_at, updated_at)
		VALUES ('order_' || $1, $1, 'pending', $2, $2) RETURNING id`, session, at).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func (b *sessionEventsBundle) deliver(t *testing.T, e *postgres.Events, eventID string) payrecon.EventResult {
	t.Helper()
	payload, err := b.sim.EventPayload(eventID)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := payrecon.ParseEvent(payload)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ProcessEvent(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (b *sessionEventsBundle) status(t *testing.T, id int64) (status string, transitions int) {
	t.Helper()
	if err := b.pool.QueryRow(context.Background(), `SELECT status, (SELECT count(*) FROM payment_transitions WHERE payment_id = $1) FROM payments WHERE id = $1`, id).Scan(&status, &transitions); err != nil {
		t.Fatal(err)
	}
	return status, transitions
}

// The four checkout.session.* events through the canonical writer, matched
// by session id: completed (paid) and async_payment_succeeded move a
// pending row to paid, async_payment_failed and expired to failed, a
// completion still processing changes nothing, a redelivery is a
// duplicate, and a late event never moves a payment backwards. The
// session's PaymentIntent events, which find no row, leave no
// missing_locally finding open once the session's event arrives.
func TestSessionEventsThroughTheWriter(t *testing.T) {
	t.Parallel()
	b := setupSessionEvents(t)
	card, async, failing, expiring := b.sessionRow(t, "cs_test_card"), b.sessionRow(t, "cs_test_async"), b.sessionRow(t, "cs_test_failing"), b.sessionRow(t, "cs_test_expiring")

	before := len(b.sim.Events())
	completed, _, err := b.sim.CompleteSession("cs_test_card", stripesim.Intent{}, false)
	if err != nil {
		t.Fatal(err)
	}
	// The intent's own events come first and find no row.
	for _, e := range b.sim.Events()[before:] {
		if e.Type == payrecon.EventPaymentIntentSucceeded {
			if res := b.deliver(t, b.events, e.ID); res.Outcome != string(payrecon.PaymentMissing) {
				t.Fatalf("the session's payment_intent.succeeded: %+v", res)
			}
		}
	}
	if res := b.deliver(t, b.events, completed); res.Outcome != string(payrecon.Applied) || res.PaymentID != card {
		t.Fatalf("checkout.session.completed: %+v", res)
	}
	if res := b.deliver(t, b.events, completed); !res.Duplicate {
		t.Fatalf("redelivery: %+v", res)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND resolved_at IS NULL"); n != 0 {
		t.Errorf("%d missing_locally findings left open for the session's PaymentIntent", n)
	}

	processing, _, _ := b.sim.CompleteSession("cs_test_async", stripesim.Intent{}, true)
	if res := b.deliver(t, b.events, processing); res.Outcome != payrecon.OutcomeIgnored {
		t.Fatalf("completed, still processing: %+v", res)
	}
	before = len(b.sim.Events())
	settled, _ := b.sim.SettleAsyncSession("cs_test_async", true)
	if res := b.deliver(t, b.events, settled); res.Outcome != string(payrecon.Applied) {
		t.Fatalf("async_payment_succeeded: %+v", res)
	}
	// The intent's own event arrives after the session's: the session row
	// accounts for the intent, which is never missing_locally.
	for _, e := range b.sim.Events()[before:] {
		if e.Type == payrecon.EventPaymentIntentSucceeded {
			b.deliver(t, b.events, e.ID)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally'"); n != 1 {
		t.Errorf("%d missing_locally findings: want only the card's, opened before its session's event (and resolved)", n)
	}
	failStart, _, _ := b.sim.CompleteSession("cs_test_failing", stripesim.Intent{}, true)
	b.deliver(t, b.events, failStart)
	failed, _ := b.sim.SettleAsyncSession("cs_test_failing", false)
	if res := b.deliver(t, b.events, failed); res.Outcome != string(payrecon.Applied) {
		t.Fatalf("async_payment_failed: %+v", res)
	}
	expired, _ := b.sim.ExpireSession("cs_test_expiring")
	if res := b.deliver(t, b.events, expired); res.Outcome != string(payrecon.Applied) {
		t.Fatalf("expired: %+v", res)
	}
	for id, want := range map[int64]string{card: "paid", async: "paid", failing: "failed", expiring: "failed"} {
		if got, n := b.status(t, id); got != want || n != 1 {
			t.Errorf("payment %d: %s after %d transitions, want %s after 1", id, got, n, want)
		}
	}
}

// A lost checkout.session.completed is repaired by the sweep (through the
// canonical writer's repair road) and, on another table, by the events
// catch-up's road (the event listed from Stripe with the catch-up's types).
func TestLostSessionCompletedRepaired(t *testing.T) {
	t.Parallel()
	t.Run("by the sweep", func(t *testing.T) {
		t.Parallel()
		b := setupSessionEvents(t)
		id := b.sessionRow(t, "cs_test_lost")
		if _, _, err := b.sim.CompleteSession("cs_test_lost", stripesim.Intent{}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := sweep.New(b.store, b.gw, sweep.Config{Mode: sweep.ModeRetrieve}).RunCycle(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		applyRepairs(t, b.pool)
		if got, n := b.status(t, id); got != "paid" || n != 1 {
			t.Fatalf("after the sweep's repair: %s, %d transitions", got, n)
		}
	})
	t.Run("by the catch-up", func(t *testing.T) {
		t.Parallel()
		b := setupSessionEvents(t)
		id := b.sessionRow(t, "cs_test_lost")
		if _, _, err := b.sim.CompleteSession("cs_test_lost", stripesim.Intent{}, false); err != nil {
			t.Fatal(err)
		}
		page, err := b.gw.ListEvents(context.Background(), payrecon.EventQuery{Types: payrecon.CatchUpEventTypes})
		if err != nil {
			t.Fatal(err)
		}
		catchup := b.events.WithSource(payrecon.SourceEvents)
		applied := 0
		for i := len(page.Events) - 1; i >= 0; i-- { // oldest first, as the catch-up walks
			ev, err := payrecon.ParseEvent(page.Events[i].JSON)
			if err != nil {
				t.Fatal(err)
			}
			res, err := catchup.ProcessEvent(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome == string(payrecon.Applied) {
				applied++
			}
		}
		if got, n := b.status(t, id); got != "paid" || n != 1 || applied != 1 {
			t.Fatalf("after the catch-up: %s, %d transitions, %d applied", got, n, applied)
		}
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions WHERE source = 'events'"); n != 1 {
			t.Errorf("%d transitions recorded with source events", n)
		}
	})
}

// An expired session is repaired to failed exactly once while a late
// checkout.session.expired webhook races the sweep's repair.
func TestExpiredSessionRepairedOnceWhileWebhookRaces(t *testing.T) {
	t.Parallel()
	for round := range 5 {
		b := setupSessionEvents(t)
		id := b.sessionRow(t, "cs_test_expired")
		expired, err := b.sim.ExpireSession("cs_test_expired")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sweep.New(b.store, b.gw, sweep.Config{Mode: sweep.ModeRetrieve}).RunCycle(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		var outbox int64
		if err := b.pool.QueryRow(context.Background(), "SELECT id FROM outbox WHERE event_type = 'ApplyPaymentCanceled'").Scan(&outbox); err != nil {
			t.Fatalf("round %d: the sweep queued no ApplyPaymentCanceled: %v", round, err)
		}
		var wg sync.WaitGroup
		var repairErr error
		var webhook payrecon.EventResult
		wg.Add(2)
		go func() {
			defer wg.Done()
			repairErr = pgx.BeginFunc(context.Background(), b.pool, func(tx pgx.Tx) error {
				_, err := postgres.NewWriter(nil).ApplyRepair(context.Background(), tx, outbox)
				return err
			})
		}()
		go func() {
			defer wg.Done()
			payload, _ := b.sim.EventPayload(expired)
			ev, _ := payrecon.ParseEvent(payload)
			webhook, _ = b.events.ProcessEvent(context.Background(), ev)
		}()
		wg.Wait()
		if repairErr != nil {
			t.Fatal(repairErr)
		}
		if webhook.Outcome != string(payrecon.Applied) && webhook.Outcome != string(payrecon.AlreadyInTarget) {
			t.Fatalf("round %d: the webhook: %+v", round, webhook)
		}
		if got, n := b.status(t, id); got != "failed" || n != 1 {
			t.Fatalf("round %d: %s after %d transitions, want failed after exactly 1", round, got, n)
		}
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_cancel' AND resolved_at IS NULL"); n != 0 {
			t.Errorf("round %d: the missed_cancel finding is still open", round)
		}
	}
}

// applyRepairs applies every queued repair command through the canonical
// writer's repair road, as the relay does.
func applyRepairs(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT id FROM outbox WHERE processed_at IS NULL ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatal("no repair command queued")
	}
	for _, id := range ids {
		if err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
			_, err := postgres.NewWriter(nil).ApplyRepair(context.Background(), tx, id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// Connect: a checkout.session.* event from another account than the one
// the session row records is never applied and opens account_mismatch;
// from the row's own account it is applied.
func TestSessionEventFromAnotherAccount(t *testing.T) {
	t.Parallel()
	b := setupSessionEvents(t)
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	ac, err := postgres.DetectAccountColumn(context.Background(), b.pool, postgres.AccountColumnDefault)
	if err != nil || !ac.Found {
		t.Fatalf("account column: %+v %v", ac, err)
	}
	b.events.Accounts = ac
	at := time.Now().Add(-time.Hour).Truncate(time.Second)
	row := func(session, account string) int64 {
		if _, err := b.sim.CreateSession(stripesim.Session{ID: session, Account: "acct_A", Created: at}); err != nil {
			t.Fatal(err)
		}
		var id int64
		if err := b.pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_checkout_session_id, stripe_account_id, status, created_at, updated_at)
			VALUES ('order_' || $1, $1, $2, 'pending', $3, $3) RETURNING id`, session, account, at).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	theirs, ours := row("cs_test_theirs", "acct_B"), row("cs_test_ours", "acct_A")
	for _, cs := range []string{"cs_test_theirs", "cs_test_ours"} {
		ev, _, err := b.sim.CompleteSession(cs, stripesim.Intent{}, false)
		if err != nil {
			t.Fatal(err)
		}
		res := b.deliver(t, b.events, ev)
		want := string(payrecon.Applied)
		if cs == "cs_test_theirs" {
			want = payrecon.OutcomeAccountMismatch
		}
		if res.Outcome != want {
			t.Errorf("%s: %+v, want %s", cs, res, want)
		}
	}
	if got, n := b.status(t, theirs); got != "pending" || n != 0 {
		t.Errorf("the other account's event moved the row: %s, %d transitions", got, n)
	}
	if got, _ := b.status(t, ours); got != "paid" {
		t.Errorf("the row's own account's event: %s", got)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'account_mismatch' AND payment_id = $1", theirs); n != 1 {
		t.Errorf("%d account_mismatch findings", n)
	}
}

// The console's lookup finds a session row (its PaymentIntent id NULL) by
// its id and by its order, and reads its intent as "".
func TestConsoleLookupOfASessionRow(t *testing.T) {
	t.Parallel()
	b := setupSessionEvents(t)
	id := b.sessionRow(t, "cs_test_console")
	reader := postgres.NewConsoleReader(b.pool, postgres.ConsoleConfig{RepairKind: "repair"})
	for _, q := range []string{fmt.Sprint(id), "order_cs_test_console"} {
		ms, err := reader.Lookup(context.Background(), q)
		if err != nil {
			t.Fatalf("lookup %q: %v", q, err)
		}
		if len(ms) != 1 || ms[0].Payment == nil || ms[0].Payment.ID != id || ms[0].IntentID != "" {
			t.Errorf("lookup %q: %+v", q, ms)
		}
	}
}
