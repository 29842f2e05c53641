package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// setupAccounts makes payments with the account column: three rows of
// the platform (NULL, empty), two of acct_A, one of acct_B.
func setupAccounts(t *testing.T) (*postgresBundle, postgres.AccountColumn) {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	old := time.Now().Add(-time.Hour)
	ids := pgtest.InsertPayments(t, pool, []pgtest.Payment{
		{IntentID: "pi_p1", Status: payrecon.StatusPaid, CreatedAt: old}, {IntentID: "pi_a1", Status: payrecon.StatusPaid, CreatedAt: old},
		{IntentID: "pi_p2", Status: payrecon.StatusPaid, CreatedAt: old}, {IntentID: "pi_a2", Status: payrecon.StatusPending, CreatedAt: old},
		{IntentID: "pi_b1", Status: payrecon.StatusPending, CreatedAt: old}, {IntentID: "pi_p3", Status: payrecon.StatusPaid, CreatedAt: old},
	})
	pgtest.Exec(t, pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = 'acct_A' WHERE id = ANY($1)", []int64{ids[1], ids[3]})
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = 'acct_B' WHERE id = $1", ids[4])
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = '' WHERE id = $1", ids[2])
	col, err := postgres.DetectAccountColumn(ctx, pool, postgres.AccountColumnDefault)
	if err != nil || !col.Found {
		t.Fatalf("detect: %+v, %v", col, err)
	}
	return &postgresBundle{pool: pool, ids: ids}, col
}

type postgresBundle struct {
	pool *pgxpool.Pool
	ids  []int64
}

func TestAccountStoreReadsOnlyItsAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, col := setupAccounts(t)
	pool := b.pool
	built, err := postgres.EnsureAccountIndex(ctx, pool, col)
	if err != nil || !built {
		t.Fatalf("index: %v, %v", built, err)
	}
	if again, err := postgres.EnsureAccountIndex(ctx, pool, col); err != nil || again {
		t.Fatalf("second build: %v, %v; want nothing to do", again, err)
	}
	accounts, err := postgres.ListAccounts(ctx, pool, col)
	if err != nil || !slices.Equal(accounts, []string{"", "acct_A", "acct_B"}) {
		t.Fatalf("accounts %q, %v", accounts, err)
	}
	store := postgres.NewStore(pool)
	for account, want := range map[string][]int64{"": {b.ids[0], b.ids[2], b.ids[5]}, "acct_A": {b.ids[1], b.ids[3]}, "acct_B": {b.ids[4]}} {
		s := store.ForAccount(col, account)
		job := payrecon.AccountJob("payments-vs-stripe", account)
		_, rows, _, err := s.ReadBatch(ctx, job, 10, 5, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range rows {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("account %q reads %v, want %v", account, got, want)
		}
		if n, err := s.CountCreatedBetween(ctx, time.Now().Add(-2*time.Hour), time.Now(), 100); err != nil || n != int64(len(want)) {
			t.Errorf("account %q counts %d (%v), want %d", account, n, err, len(want))
		}
	}
	// Without the column, one account: every row.
	none := postgres.AccountColumn{Column: "stripe_account_id"}
	if accounts, err := postgres.ListAccounts(ctx, pool, none); err != nil || !slices.Equal(accounts, []string{""}) {
		t.Fatalf("no column: accounts %q, %v", accounts, err)
	}
	_, rows, _, err := store.ForAccount(none, "").ReadBatch(ctx, "all", 10, 0, time.Now())
	if err != nil || len(rows) != 6 {
		t.Fatalf("no column: %d rows, %v", len(rows), err)
	}
}

// A row moved to another account while its Stripe answer was on the way is
// not verified under the old one.
func TestAccountStoreDoesNotVerifyARowThatMovedAccounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, col := setupAccounts(t)
	pool := b.pool
	s := postgres.NewStore(pool).ForAccount(col, "acct_A")
	job := payrecon.AccountJob("payments-vs-stripe", "acct_A")
	cur, rows, _, err := s.ReadBatch(ctx, job, 10, 0, time.Now())
	if err != nil || len(rows) != 2 {
		t.Fatalf("read: %d rows, %v", len(rows), err)
	}
	pgtest.Exec(t, pool, "UPDATE payments SET stripe_account_id = 'acct_B' WHERE id = $1", rows[0].ID)
	var checks []payrecon.Check
	for _, r := range rows {
		st := payrecon.IntentSucceeded
		if r.Status == payrecon.StatusPending {
			st = payrecon.IntentProcessing
		}
		checks = append(checks, payrecon.Check{Row: r, Observed: st, ReadAt: cur.ReadAt, Decision: payrecon.Classify(r.Status, st)})
	}
	res, err := s.CommitBatch(ctx, payrecon.BatchCommit{Job: job, From: cur.LastID, To: rows[1].ID, Advance: true, Checks: checks, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verified != 1 || len(res.Stale) != 1 || res.Stale[0] != rows[0].ID {
		t.Fatalf("commit %+v; want the moved row stale, the other verified", res)
	}
}

// An event whose account is not the one its payment's row records is never
// applied: it opens account_mismatch, which the sweep never heals. The
// same event from the row's own account is applied.
func TestEventFromAnotherAccountIsNotApplied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, col := setupAccounts(t)
	ev := func(id, intent, account string) payrecon.Event {
		return payrecon.Event{ID: id, Type: payrecon.EventPaymentIntentSucceeded, Account: account, Created: time.Now(),
			Object: payrecon.EventObject{ID: intent, Object: "payment_intent", Status: "succeeded"}}
	}
	events := postgres.NewEvents(b.pool, postgres.NewWriter(nil), nil)
	events.Accounts = col
	for _, c := range []struct {
		ev      payrecon.Event
		outcome string
	}{
		{ev("evt_1", "pi_a2", "acct_B"), payrecon.OutcomeAccountMismatch}, // acct_A's row, acct_B's event
		{ev("evt_2", "pi_b1", ""), payrecon.OutcomeAccountMismatch},       // acct_B's row, the platform's event
		{ev("evt_3", "pi_a2", "acct_A"), string(payrecon.Applied)},
	} {
		res, err := events.ProcessEvent(ctx, c.ev)
		if err != nil || res.Outcome != c.outcome {
			t.Fatalf("%s: %+v, %v; want %s", c.ev.ID, res, err, c.outcome)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'account_mismatch' AND resolved_at IS NULL"); n != 2 {
		t.Errorf("%d account_mismatch findings, want 2", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE stripe_payment_intent_id = 'pi_b1' AND status = 'pending' AND version = 0"); n != 1 {
		t.Errorf("acct_B's payment was changed by the platform's event")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE stripe_payment_intent_id = 'pi_a2' AND status = 'paid' AND version = 1"); n != 1 {
		t.Errorf("acct_A's own event was not applied once")
	}
}
