package sweep_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// sessionCase is one session row: its local status and what Stripe has.
type sessionCase struct {
	name  string
	local payrecon.LocalStatus
	// make sets up the session in the simulator and returns its id.
	make func(t *testing.T, sim *stripesim.Server, id string, created time.Time)
	// want is the finding kind the row gets ("" none) and its observed
	// status.
	kind     payrecon.Kind
	observed string
}

func sessionCases() []sessionCase {
	open := func(t *testing.T, sim *stripesim.Server, id string, created time.Time) {
		t.Helper()
		if _, err := sim.CreateSession(stripesim.Session{ID: id, Created: created, ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	expired := func(t *testing.T, sim *stripesim.Server, id string, created time.Time) {
		t.Helper()
		open(t, sim, id, created)
		if _, err := sim.ExpireSession(id); err != nil {
			t.Fatal(err)
		}
	}
	paid := func(amount int64, async bool) func(t *testing.T, sim *stripesim.Server, id string, created time.Time) {
		return func(t *testing.T, sim *stripesim.Server, id string, created time.Time) {
			t.Helper()
			open(t, sim, id, created)
			// Paid half a minute after the session was created: its intent
			// falls in the listed windows of neighbouring batches too.
			in := stripesim.Intent{ID: "pi_of_" + id, Amount: amount, Currency: "usd", Created: created.Add(30 * time.Second)}
			if _, _, err := sim.CompleteSession(id, in, async); err != nil {
				t.Fatal(err)
			}
		}
	}
	none := func(*testing.T, *stripesim.Server, string, time.Time) {}
	return []sessionCase{
		{"open: never judged before it expires", payrecon.StatusPending, open, "", string(payrecon.ObservedSessionOpen)},
		{"expired without payment: missed_cancel", payrecon.StatusPending, expired, payrecon.KindMissedCancel, "canceled"},
		{"expired, failed locally: in sync", payrecon.StatusFailed, expired, "", "canceled"},
		{"lost checkout.session.completed: missed_success", payrecon.StatusPending, paid(1000, false), payrecon.KindMissedSuccess, "succeeded"},
		{"complete and paid: in sync", payrecon.StatusPaid, paid(1000, false), "", "succeeded"},
		{"asynchronous payment processing: in flight", payrecon.StatusPending, paid(1000, true), "", "processing"},
		{"money through the session's intent", payrecon.StatusPaid, paid(999, false), payrecon.KindAmountMismatch, "succeeded"},
		{"no such session", payrecon.StatusPending, none, payrecon.KindMissingExternally, string(payrecon.NotFound)},
	}
}

// setupSessions makes a payments table with the session column (the
// PaymentIntent id nullable, as a team on Checkout Sessions has it): n
// intent rows in sync interleaved with reps copies of every session case,
// and two rows with neither id.
func setupSessions(t *testing.T, reps int) (*simBundle, map[int64]sessionCase) {
	t.Helper()
	b := setupSim(t, nil, nil, stripesim.Faults{})
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text, ADD COLUMN stripe_checkout_session_id text")
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
	base := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	at := base
	byID := map[int64]sessionCase{}
	insert := func(intent, session *string, local payrecon.LocalStatus, created time.Time) int64 {
		var id int64
		if err := b.pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_payment_intent_id, stripe_checkout_session_id, status, created_at, updated_at, amount, currency)
			VALUES ('order_' || coalesce($1, $2, 'none') || $5::bigint::text, $1, $2, $3, $4, $4, 1000, 'usd') RETURNING id`,
			intent, session, string(local), created, created.UnixNano()).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	n := 0
	for r := range reps {
		for _, c := range sessionCases() {
			at = at.Add(7 * time.Second)
			pi := fmt.Sprintf("pi_row_%05d", n)
			b.sim.Put(stripesim.Intent{ID: pi, Status: payrecon.IntentSucceeded, Created: at, Amount: 1000, Currency: "usd"})
			insert(&pi, nil, payrecon.StatusPaid, at)
			n++
			at = at.Add(7 * time.Second)
			cs := fmt.Sprintf("cs_test_%02d_%s", r, strings.ReplaceAll(c.name[:8], " ", "_"))
			c.make(t, b.sim, cs, at)
			byID[insert(nil, &cs, c.local, at)] = c
		}
	}
	// Real orphans among them, the last just after the last row: list mode
	// reports every one, however long it held them back.
	for i := range 6 {
		created := base.Add(time.Duration(i*len(byID)/5) * 14 * time.Second).Add(3 * time.Second)
		if i == 5 {
			created = at.Add(20 * time.Second)
		}
		b.sim.Put(stripesim.Intent{ID: fmt.Sprintf("pi_orphan_%d", i), Status: payrecon.IntentSucceeded, Created: created})
	}
	insert(nil, nil, payrecon.StatusPending, at.Add(time.Second))
	empty := ""
	insert(nil, &empty, payrecon.StatusPending, at.Add(2*time.Second))
	cols, err := postgres.DetectMoneyColumns(context.Background(), b.pool, "amount", "currency")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := postgres.DetectSessionColumn(context.Background(), b.pool, postgres.SessionColumnDefault)
	if err != nil || !sc.Found {
		t.Fatalf("session column: %+v %v", sc, err)
	}
	b.store = b.store.WithMoneyColumns(cols).WithSessionColumn(sc)
	return b, byID
}

// Every session case gets its finding (or none) and its observation, in
// retrieve, list and auto mode alike; rows with neither id stay
// invalid_local_row; list mode reads the sessions for a fraction of a
// request per row, and reports no session's PaymentIntent missing_locally.
func TestSessionRowsEveryModeAgrees(t *testing.T) {
	t.Parallel()
	results := map[sweep.Mode][]string{}
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList, sweep.ModeAuto} {
		b, cases := setupSessions(t, 25)
		rep, err := b.sweeper(sweep.Config{Batch: 100, Mode: mode, Money: payrecon.MoneyChecks{Amount: true, Currency: true}}).RunCycle(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for id, c := range cases {
			var observed *string
			var kinds []string
			if err := b.pool.QueryRow(context.Background(), `SELECT observed_external_status,
				coalesce((SELECT array_agg(kind ORDER BY kind) FROM reconciliation_findings WHERE payment_id = $1), '{}') FROM payments WHERE id = $1`, id).Scan(&observed, &kinds); err != nil {
				t.Fatal(err)
			}
			want := []string{}
			if c.kind != "" {
				want = []string{string(c.kind)}
			}
			if observed == nil || *observed != c.observed || fmt.Sprint(kinds) != fmt.Sprint(want) {
				t.Errorf("%s: %s: observed %v, findings %v; want %q, %v", mode, c.name, deref(observed), kinds, c.observed, want)
			}
		}
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'invalid_local_row'"); n != 2 {
			t.Errorf("%s: %d invalid_local_row findings, want the 2 rows with neither id", mode, n)
		}
		// Paid half a minute after their rows, the sessions' intents fall in
		// the listed windows of the batches before their rows too: none is
		// ever taken for an orphan, not even for a while.
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND stripe_payment_intent_id NOT LIKE 'pi_orphan_%'"); n != 0 {
			t.Errorf("%s: %d missing_locally findings: a session's PaymentIntent taken for an orphan", mode, n)
		}
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND stripe_payment_intent_id LIKE 'pi_orphan_%'"); mode == sweep.ModeList && n != 6 {
			t.Errorf("list mode reported %d of the 6 orphans", n)
		}
		if n := b.count(t, "SELECT count(*) FROM payrecon_session_intents"); n != 100 {
			t.Errorf("%s: %d session intents kept, want the 100 sessions with an intent", mode, n)
		}
		// The finding names the session's PaymentIntent the row does not record.
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND details->>'session_payment_intent' LIKE 'pi_of_cs_%' AND details->>'checkout_session' LIKE 'cs_test_%'"); n != 25 {
			t.Errorf("%s: %d missed_success findings name their session and its PaymentIntent, want 25", mode, n)
		}
		if n := b.count(t, "SELECT count(*) FROM outbox WHERE event_type = 'ApplyPaymentCanceled'"); n != 25 {
			t.Errorf("%s: %d ApplyPaymentCanceled commands, want one per expired pending session (25)", mode, n)
		}
		rows := 2*len(cases) + 2
		t.Logf("%s: %d Stripe requests for %d rows (%d session rows)", mode, rep.StripeCalls, rows, len(cases))
		// The 25 sessions Stripe does not have are retrieved one by one
		// (a listing cannot say an id does not exist); the rest is listed.
		if mode == sweep.ModeList && rep.StripeCalls > 25+rows/10 {
			t.Errorf("list mode made %d requests for %d rows", rep.StripeCalls, rows)
		}
		results[mode] = sessionSnapshot(t, b)
	}
	for _, mode := range []sweep.Mode{sweep.ModeList, sweep.ModeAuto} {
		got, want := results[mode], results[sweep.ModeRetrieve]
		if len(got) != len(want) {
			t.Errorf("%s mode: %d findings and observations, retrieve mode %d", mode, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s mode disagrees with retrieve mode:\n%s\nvs\n%s", mode, got[i], want[i])
				break
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// sessionSnapshot is every finding and observation keyed by the row's ids.
func sessionSnapshot(t *testing.T, b *simBundle) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT 'F ' || coalesce(p.stripe_payment_intent_id, p.stripe_checkout_session_id, f.stripe_payment_intent_id, '-') || ' ' || f.kind || ' ' || coalesce(f.external_status, '-') || ' ' || coalesce((f.details #- '{charge,observed_at}' #- '{charge,created}')::text, '-')
		  FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id
		UNION ALL
		SELECT 'O ' || coalesce(stripe_payment_intent_id, stripe_checkout_session_id, '-') || ' ' || coalesce(observed_external_status, '-') FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// Connect: a connected account's session row is read with that account's
// Stripe-Account (its job's gateway), in both modes, and never as another
// account.
func TestSessionRowOfAConnectedAccount(t *testing.T) {
	t.Parallel()
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		b := setupSim(t, nil, nil, stripesim.Faults{})
		pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN stripe_checkout_session_id text, ADD COLUMN stripe_account_id text")
		pgtest.Exec(t, b.pool, "ALTER TABLE payments ALTER COLUMN stripe_payment_intent_id DROP NOT NULL")
		at := time.Now().Add(-time.Hour).Truncate(time.Second)
		for i := range 3 {
			cs := fmt.Sprintf("cs_acct_%d", i)
			if _, err := b.sim.CreateSession(stripesim.Session{ID: cs, Account: "acct_A", Created: at.Add(time.Duration(i) * time.Second)}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.sim.CompleteSession(cs, stripesim.Intent{}, false); err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, b.pool, `INSERT INTO payments (order_id, stripe_checkout_session_id, stripe_account_id, status, created_at, updated_at)
				VALUES ('order_' || $1::text, $1, 'acct_A', 'pending', $2, $2)`, cs, at.Add(time.Duration(i)*time.Second))
		}
		sc, _ := postgres.DetectSessionColumn(context.Background(), b.pool, postgres.SessionColumnDefault)
		ac, _ := postgres.DetectAccountColumn(context.Background(), b.pool, postgres.AccountColumnDefault)
		store := b.store.WithSessionColumn(sc).ForAccount(ac, "acct_A")
		s := sweep.New(store, b.gw.ForAccount("acct_A", nil), sweep.Config{Job: payrecon.AccountJob(sweep.DefaultJob, "acct_A"), Mode: mode,
			SleepFunc: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
		if _, err := s.RunCycle(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success'"); n != 3 {
			t.Errorf("%s: %d missed_success findings, want 3", mode, n)
		}
		if w := b.sim.Stats().WrongAccount; w != 0 {
			t.Errorf("%s: %d reads as the wrong account", mode, w)
		}
	}
}

// On a table with session rows, an orphan held back by the last full batch
// is reported at the wrap.
func TestHeldBackOrphansReportedAtTheWrap(t *testing.T) {
	t.Parallel()
	b, cases := setupSessions(t, 25)
	rows := 2*len(cases) + 2 // two full batches, then the wrap
	rep, err := b.sweeper(sweep.Config{Batch: rows / 2, Mode: sweep.ModeList}).RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND stripe_payment_intent_id LIKE 'pi_orphan_%'"); n != 6 {
		t.Errorf("%d of the 6 orphans reported (cycle %+v)", n, rep)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND stripe_payment_intent_id NOT LIKE 'pi_orphan_%'"); n != 0 {
		t.Errorf("%d sessions' intents taken for orphans", n)
	}
}
