package sweep_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// moneyRow is one payment with local money (amount nil = NULL) and what
// Stripe has, and the money kinds the sweep must record for it.
type moneyRow struct {
	local    payrecon.LocalStatus
	amount   *int64
	currency string
	stripe   stripesim.Intent
	want     []payrecon.Kind
}

func i64(n int64) *int64 { return &n }

// moneyRows covers every money kind, the in-sync cases beside them, and a
// status drift next to a money drift.
func moneyRows() []moneyRow {
	paid, pending, failed := payrecon.StatusPaid, payrecon.StatusPending, payrecon.StatusFailed
	ok := payrecon.IntentSucceeded
	return []moneyRow{
		{paid, i64(5000), "jpy", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok}, nil},
		{paid, i64(5000), "JPY", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok}, nil},
		{paid, nil, "", stripesim.Intent{Amount: 7, Currency: "eur", Status: ok}, nil},
		{paid, i64(5000), "jpy", stripesim.Intent{Amount: 5000, AmountReceived: 4000, Currency: "jpy", Status: ok}, []payrecon.Kind{payrecon.KindAmountMismatch}},
		{pending, i64(5000), "jpy", stripesim.Intent{Amount: 6000, Currency: "jpy", Status: payrecon.IntentRequiresPaymentMethod}, []payrecon.Kind{payrecon.KindAmountMismatch}},
		{paid, i64(5000), "usd", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok}, []payrecon.Kind{payrecon.KindCurrencyMismatch}},
		{paid, i64(5000), "jpy", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok, AmountRefunded: 5000}, []payrecon.Kind{payrecon.KindRefundedExternally}},
		{paid, i64(5000), "jpy", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok, AmountRefunded: 1200}, []payrecon.Kind{payrecon.KindPartiallyRefunded}},
		{paid, i64(5000), "jpy", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok, Disputed: true}, []payrecon.Kind{payrecon.KindDisputed}},
		// A status drift and a money drift: two findings.
		{failed, i64(5000), "jpy", stripesim.Intent{Amount: 5000, Currency: "jpy", Status: ok, Disputed: true},
			[]payrecon.Kind{payrecon.KindFailedLocallyPaidExternally, payrecon.KindDisputed}},
		{pending, i64(5000), "jpy", stripesim.Intent{Amount: 5000, AmountReceived: 4000, Currency: "jpy", Status: ok},
			[]payrecon.Kind{payrecon.KindMissedSuccess}},
	}
}

type moneyBundle struct {
	*simBundle
	rows []moneyRow
}

// setupMoney builds the payments of moneyRows in the simulator and the
// database; withColumns adds the amount and currency columns first (the
// application's own columns: payrecon never adds them).
func setupMoney(t *testing.T, withColumns bool) *moneyBundle {
	t.Helper()
	rows := moneyRows()
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	sims := make([]simRow, len(rows))
	for i, r := range rows {
		at := base.Add(time.Duration(i) * time.Second)
		sims[i] = simRow{local: r.local, localCreated: at}
	}
	b := setupSim(t, sims, nil, stripesim.Faults{})
	for i, r := range rows {
		in := r.stripe
		in.ID, in.Created = fmt.Sprintf("pi_sim_%06d", i), base.Add(time.Duration(i)*time.Second)
		b.sim.Put(in)
	}
	mb := &moneyBundle{simBundle: b, rows: rows}
	if withColumns {
		mb.addColumns(t)
	}
	return mb
}

func (b *moneyBundle) addColumns(t *testing.T) {
	t.Helper()
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	for i, r := range b.rows {
		pgtest.Exec(t, b.pool, "UPDATE payments SET amount = $2, currency = nullif($3, '') WHERE id = $1", b.ids[i], r.amount, r.currency)
	}
}

// sweeper detects the money columns, as `run` does at start, and sweeps
// with them.
func (b *moneyBundle) moneySweeper(t *testing.T, mode sweep.Mode, ignore map[payrecon.Kind]bool) (*sweep.Sweeper, postgres.MoneyColumns) {
	t.Helper()
	cols, err := postgres.DetectMoneyColumns(context.Background(), b.pool, "amount", "currency")
	if err != nil {
		t.Fatal(err)
	}
	store := b.store.WithMoneyColumns(cols)
	return mustNew(store, b.gw, sweep.Config{Batch: 4, Mode: mode, Money: cols.Checks(ignore),
		SleepFunc: func(ctx context.Context, d time.Duration) error { return ctx.Err() }}), cols
}

// openKinds lists the open findings as "row:kind", row being the index in
// moneyRows.
func (b *moneyBundle) openKinds(t *testing.T) []string {
	t.Helper()
	idx := map[int64]int{}
	for i, id := range b.ids {
		idx[id] = i
	}
	rows, err := b.pool.Query(context.Background(),
		"SELECT payment_id, kind FROM reconciliation_findings WHERE resolved_at IS NULL AND payment_id IS NOT NULL ORDER BY payment_id, kind")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			id   int64
			kind string
		)
		if err := rows.Scan(&id, &kind); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%s", idx[id], kind))
	}
	return out
}

func (b *moneyBundle) want(filter func(payrecon.Kind) bool) []string {
	var out []string
	for i, r := range b.rows {
		var ks []string
		for _, k := range r.want {
			if filter == nil || filter(k) {
				ks = append(ks, string(k))
			}
		}
		// the query orders by kind within a payment
		for j := range ks {
			for k := j + 1; k < len(ks); k++ {
				if ks[k] < ks[j] {
					ks[j], ks[k] = ks[k], ks[j]
				}
			}
		}
		for _, k := range ks {
			out = append(out, fmt.Sprintf("%d:%s", i, k))
		}
	}
	return out
}

// paymentsState is every payment's status, version and updated_at: what a
// money finding must never change.
func (b *moneyBundle) paymentsState(t *testing.T) string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT id, status, version, updated_at, amount, currency FROM payments ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&sb, v...)
	}
	return sb.String()
}

// Every money kind is found in retrieve and list mode alike, each its own
// finding next to a status finding, with what Stripe said kept in details;
// and the sweep changes no payment's status, version or money.
func TestMoneyFindingsBothModes(t *testing.T) {
	t.Parallel()
	results := map[sweep.Mode]string{}
	for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList} {
		b := setupMoney(t, true)
		before := b.paymentsState(t)
		s, cols := b.moneySweeper(t, mode, nil)
		if !cols.Amount || !cols.Currency {
			t.Fatalf("columns not detected: %+v", cols)
		}
		rep, err := s.RunCycle(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := b.openKinds(t)
		if fmt.Sprint(got) != fmt.Sprint(b.want(nil)) {
			t.Errorf("%s: open findings %v, want %v", mode, got, b.want(nil))
		}
		// No relay runs here: missed_success stays open, its repair queued.
		if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND resolved_at IS NULL"); n != 1 {
			t.Errorf("%s: %d missed_success findings", mode, n)
		}
		if after := b.paymentsState(t); after != before {
			t.Errorf("%s: the sweep changed payments:\nbefore %s\nafter  %s", mode, before, after)
		}
		if n := b.count(t, "SELECT count(*) FROM outbox WHERE event_type <> 'ApplyPaymentSucceeded'"); n != 0 {
			t.Errorf("%s: %d repair commands for money findings", mode, n)
		}
		var det string
		if err := b.pool.QueryRow(context.Background(),
			"SELECT details::text FROM reconciliation_findings WHERE kind = 'refunded_externally'").Scan(&det); err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{`"amount_refunded": 5000`, `"amount_captured": 5000`, `"currency": "jpy"`, `"refunded": true`} {
			if !strings.Contains(det, w) {
				t.Errorf("%s: details %s lack %s", mode, det, w)
			}
		}
		t.Logf("%s: %d Stripe requests for %d rows", mode, rep.StripeCalls, len(b.rows))
		results[mode] = fmt.Sprint(got)
	}
	if results[sweep.ModeList] != results[sweep.ModeRetrieve] {
		t.Errorf("list and retrieve disagree:\n%s\n%s", results[sweep.ModeList], results[sweep.ModeRetrieve])
	}
}

// A money finding heals when its drift disappears, and only its own kind:
// a second sweep that sees the amount fixed and the dispute gone resolves
// those as healed and leaves the rest open. Sweeping again opens nothing
// twice.
func TestMoneyFindingsHeal(t *testing.T) {
	t.Parallel()
	b := setupMoney(t, true)
	s, _ := b.moneySweeper(t, sweep.ModeRetrieve, nil)
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	open := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL")
	// The local amount of row 3 is corrected to what Stripe took; row 8's
	// dispute disappears from Stripe (a new intent state without one).
	pgtest.Exec(t, b.pool, "UPDATE payments SET amount = 4000 WHERE id = $1", b.ids[3])
	in := b.rows[8].stripe
	in.ID, in.Disputed = "pi_sim_000008", false
	in.Created = time.Now().Add(-48*time.Hour + 8*time.Second).Truncate(time.Second)
	b.sim.Put(in)
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	healed := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE resolution = 'healed' AND kind IN ('amount_mismatch', 'disputed')")
	if healed != 2 {
		t.Errorf("%d money findings healed, want 2 (rows 3 and 8)", healed)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL"); n != open-2 {
		t.Errorf("%d findings open after healing, want %d", n, open-2)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE resolution = 'superseded'"); n != 0 {
		t.Errorf("%d findings superseded: a money finding never supersedes a status finding", n)
	}
	// The status finding of row 9 (failed/succeeded) is still open next to its dispute.
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND resolved_at IS NULL", b.ids[9]); n != 2 {
		t.Errorf("row 9 has %d open findings, want 2", n)
	}
}

// Without the columns, amount and currency are not judged (charge kinds
// still are); once the columns appear and the sweep restarts (detects them
// again), they are. --ignore-kinds kinds are never recorded.
func TestMoneyColumnsAbsentThenAppear(t *testing.T) {
	t.Parallel()
	b := setupMoney(t, false)
	ignore := map[payrecon.Kind]bool{payrecon.KindPartiallyRefunded: true}
	s, cols := b.moneySweeper(t, sweep.ModeRetrieve, ignore)
	if cols.Amount || cols.Currency || cols.AmountProblem == "" {
		t.Fatalf("columns detected on a table without them: %+v", cols)
	}
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	charge := func(k payrecon.Kind) bool {
		return k == payrecon.KindRefundedExternally || k == payrecon.KindDisputed || !k.IsMoney()
	}
	nonMissed := func(f func(payrecon.Kind) bool) func(payrecon.Kind) bool {
		return func(k payrecon.Kind) bool { return k != payrecon.KindMissedSuccess && f(k) }
	}
	want := b.want(nonMissed(charge))
	want = append(want[:0:0], want...)
	got := b.openKinds(t)
	gotNoMissed := []string{}
	for _, g := range got {
		if !strings.HasSuffix(g, ":missed_success") {
			gotNoMissed = append(gotNoMissed, g)
		}
	}
	if fmt.Sprint(gotNoMissed) != fmt.Sprint(want) {
		t.Errorf("without columns: %v, want %v", gotNoMissed, want)
	}

	b.addColumns(t)
	s, cols = b.moneySweeper(t, sweep.ModeRetrieve, ignore)
	if !cols.Amount || !cols.Currency {
		t.Fatalf("columns not detected after they appeared: %+v", cols)
	}
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind IN ('amount_mismatch', 'currency_mismatch') AND resolved_at IS NULL"); n != 3 {
		t.Errorf("%d amount and currency findings once the columns appeared, want 3", n)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'partially_refunded'"); n != 0 {
		t.Errorf("an ignored kind was recorded %d times", n)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE payment_id IN ($1, $2, $3)", b.ids[0], b.ids[1], b.ids[2]); n != 0 {
		t.Errorf("%d findings for in-sync rows (equal amounts, case-only currency, NULL amount)", n)
	}
}

// With --intent-metadata, only listed intents carrying the pair are
// payrecon's: an intent another system made in the same account is never
// missing_locally; with missing_locally ignored, none is.
func TestIntentMetadataLimitsMissingLocally(t *testing.T) {
	t.Parallel()
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	rows := simpleRows(20, nil)
	for i := range rows {
		rows[i].localCreated, rows[i].stripeCreat = base.Add(time.Duration(i)*time.Second), base.Add(time.Duration(i)*time.Second)
	}
	orphans := []stripesim.Intent{
		{ID: "pi_orphan_ours", Status: payrecon.IntentSucceeded, Created: base.Add(5 * time.Second), Metadata: map[string]string{"app": "shop"}},
		{ID: "pi_orphan_theirs", Status: payrecon.IntentSucceeded, Created: base.Add(6 * time.Second), Metadata: map[string]string{"app": "invoicing"}},
		{ID: "pi_orphan_bare", Status: payrecon.IntentSucceeded, Created: base.Add(7 * time.Second)},
	}
	for _, c := range []struct {
		name   string
		cfg    sweep.Config
		wanted []string
	}{
		{"no filter", sweep.Config{}, []string{"pi_orphan_bare", "pi_orphan_ours", "pi_orphan_theirs"}},
		{"app=shop", sweep.Config{IntentMetadata: map[string]string{"app": "shop"}}, []string{"pi_orphan_ours"}},
		{"ignored", sweep.Config{Money: payrecon.MoneyChecks{Ignore: map[payrecon.Kind]bool{payrecon.KindMissingLocally: true}}}, nil},
	} {
		b := setupSim(t, rows, orphans, stripesim.Faults{})
		cfg := c.cfg
		cfg.Batch, cfg.Mode = 50, sweep.ModeList
		if _, err := b.sweeper(cfg).RunCycle(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		var got []string
		r, err := b.pool.Query(context.Background(), "SELECT stripe_payment_intent_id FROM reconciliation_findings WHERE kind = 'missing_locally' ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			var id string
			if err := r.Scan(&id); err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		r.Close()
		if fmt.Sprint(got) != fmt.Sprint(c.wanted) {
			t.Errorf("%s: missing_locally for %v, want %v", c.name, got, c.wanted)
		}
	}
}

// Issue 23, defect 5: a NULL local amount is not compared, so it is not
// judged: the amount_mismatch finding it had stays open (a local amount
// erased is no evidence that the amounts agree).
func TestNullLocalAmountDoesNotHealAmountMismatch(t *testing.T) {
	t.Parallel()
	b := setupMoney(t, true)
	s, _ := b.moneySweeper(t, sweep.ModeRetrieve, nil)
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	q := "SELECT count(*) FROM reconciliation_findings WHERE kind = 'amount_mismatch' AND resolved_at IS NULL AND payment_id = $1"
	if n := b.count(t, q, b.ids[3]); n != 1 {
		t.Fatalf("row 3 has %d open amount_mismatch findings, want 1", n)
	}
	pgtest.Exec(t, b.pool, "UPDATE payments SET amount = NULL WHERE id = $1", b.ids[3])
	if _, err := s.RunCycle(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, q, b.ids[3]); n != 1 {
		t.Fatalf("a NULL local amount healed amount_mismatch (%d open)", n)
	}
}
