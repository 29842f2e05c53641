package sweep_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// The cursor sweep checks every one of 500 rows within ceil(500/200) = 3
// batches, and the fourth call wraps. (Beside the anti-example, which never
// sees 300 of them.)
func TestCursorSweepCoversEveryRow(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(500))
	s := b.sweeper(sweep.Config{Batch: 200})
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		rep, err := s.RunBatch(ctx)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if rep.Wrapped {
			t.Fatalf("batch %d wrapped early", i)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); n != 0 {
		t.Errorf("%d rows never checked after 3 batches", n)
	}
	rep, err := s.RunBatch(ctx)
	if err != nil || !rep.Wrapped {
		t.Fatalf("4th call: wrapped=%v err=%v, want the wrap", rep.Wrapped, err)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_cursor WHERE job = $1 AND last_id = 0 AND last_cycle_completed_at IS NOT NULL", sweep.DefaultJob); n != 1 {
		t.Error("wrap did not reset the cursor and set last_cycle_completed_at")
	}
	if got := b.gw.calls.Load(); got != 500 {
		t.Errorf("%d Stripe calls, want 500", got)
	}
}

func TestRunCycleReport(t *testing.T) {
	t.Parallel()
	rows := uniform(50)
	rows[3] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
	rows[7] = row{payrecon.StatusPending, payrecon.IntentCanceled}
	rows[9] = row{payrecon.StatusPaid, payrecon.IntentCanceled}
	rows[11] = row{payrecon.StatusPending, ""}
	rows[13] = row{payrecon.StatusPending, payrecon.IntentProcessing}
	b := setup(t, rows)
	rep, err := b.sweeper(sweep.Config{Batch: 20}).RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[payrecon.Verdict]int{payrecon.InSync: 45, payrecon.Repairable: 2, payrecon.NeedsReview: 2, payrecon.InFlight: 1}
	for v, n := range want {
		if rep.Counts[v] != n {
			t.Errorf("%s = %d, want %d (all: %v)", v, rep.Counts[v], n, rep.Counts)
		}
	}
	if !rep.Wrapped || rep.Scanned != 50 || rep.Verified != 50 || rep.NewFindings != 4 || rep.Commands != 2 || rep.Batches != 3 {
		t.Errorf("report = %+v", rep)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_externally' AND external_status IS NULL AND payment_id = $1", b.ids[11]); n != 1 {
		t.Error("not found in Stripe did not become missing_externally")
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE id = $1 AND observed_external_status = '(not_found)' AND last_reconciled_at IS NOT NULL", b.ids[11]); n != 1 {
		t.Error("a 404 is an answer from Stripe: the row counts as verified, observed as (not_found)")
	}
	if n := b.count(t, `SELECT count(*) FROM outbox o JOIN reconciliation_findings f ON f.id = (o.payload->>'finding_id')::bigint
		WHERE o.event_type = 'ApplyPaymentSucceeded' AND f.kind = 'missed_success' AND (o.payload->>'payment_id')::bigint = $1 AND o.aggregate_id = $1::text`, b.ids[3]); n != 1 {
		t.Error("missed_success has no ApplyPaymentSucceeded command pointing at its finding")
	}
	if n := b.count(t, "SELECT count(*) FROM outbox WHERE event_type = 'ApplyPaymentCanceled'"); n != 1 {
		t.Error("missed_cancel has no ApplyPaymentCanceled command")
	}
	// Repairs never UPDATE payments directly.
	if n := b.count(t, "SELECT count(*) FROM payments WHERE version <> 0 OR status <> 'paid' AND id NOT IN ($1, $2, $3, $4)", b.ids[3], b.ids[7], b.ids[11], b.ids[13]); n != 0 {
		t.Errorf("the sweep changed %d payments' status or version", n)
	}
}

// A Stripe call that fails: the row is unverifiable, not verified, no
// finding; it is queued for an early recheck.
func TestUnavailableRowIsNotVerified(t *testing.T) {
	t.Parallel()
	rows := uniform(30)
	rows[4] = row{payrecon.StatusPending, payrecon.IntentSucceeded} // drifted, but Stripe cannot say so
	b := setup(t, rows)
	b.gw.fail("pi_00005", &payrecon.UnavailableError{StatusCode: 503, Err: errors.New("service unavailable")})
	rep, err := b.sweeper(sweep.Config{Batch: 100}).RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[payrecon.Unverifiable] != 1 || rep.Verified != 29 {
		t.Errorf("report = %+v", rep)
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE id = $1 AND last_reconciled_at IS NULL AND observed_external_status IS NULL", b.ids[4]); n != 1 {
		t.Error("an unverifiable row was marked verified")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings"); n != 0 {
		t.Errorf("%d findings from an unverifiable row", n)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck WHERE payment_id = $1 AND reason = 'unverifiable' AND last_error LIKE '%503%'", b.ids[4]); n != 1 {
		t.Error("unverifiable row not queued for recheck")
	}
	// The queue remembers when the row was last verified (never: its
	// creation), for the lag, and keeps it when the row fails again.
	const since = "SELECT count(*) FROM reconciliation_recheck r JOIN payments p ON p.id = r.payment_id WHERE r.payment_id = $1 AND r.verified_before = p.created_at"
	if n := b.count(t, since, b.ids[4]); n != 1 {
		t.Error("the queued row's verified_before is not its creation time")
	}
	if _, _, err := b.sweeper(sweep.Config{Batch: 100}).Recheck(context.Background(), []payrecon.PaymentRow{{ID: b.ids[4], IntentID: "pi_00005", Status: payrecon.StatusPending}}); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, since+" AND r.attempts = 2", b.ids[4]); n != 1 {
		t.Error("a second failure changed the queued row's verified_before (or did not count)")
	}
}

// Rows left unverifiable are rechecked before RunCycle returns, not a cycle
// later.
func TestUnverifiableRowsAreRecheckedSoon(t *testing.T) {
	t.Parallel()
	rows := uniform(30)
	rows[4] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
	b := setup(t, rows)
	b.gw.fail("pi_00005", &payrecon.UnavailableError{StatusCode: 500, Err: errors.New("boom")})
	s := b.sweeper(sweep.Config{Batch: 100, RecheckBackoff: time.Millisecond, SleepFunc: func(ctx context.Context, d time.Duration) error {
		b.gw.fail("pi_00005", nil) // Stripe recovers while we wait
		return nil
	}})
	rep, err := s.RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StillUnverifiable != 0 || rep.Rechecked != 1 {
		t.Errorf("report = %+v", rep)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND kind = 'missed_success'", b.ids[4]); n != 1 {
		t.Error("the rechecked row's drift was not found")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck"); n != 0 {
		t.Errorf("%d rechecks left", n)
	}
}

func TestStillUnverifiableIsReported(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(30))
	b.gw.fail("pi_00005", &payrecon.UnavailableError{StatusCode: 500, Err: errors.New("boom")})
	rep, err := b.sweeper(sweep.Config{Batch: 100, RecheckBackoff: time.Millisecond, RecheckWait: time.Second}).RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StillUnverifiable != 1 {
		t.Errorf("StillUnverifiable = %d, want 1", rep.StillUnverifiable)
	}
}

// A 401 stops the sweep at once with a clear error, and nothing is written:
// no row verified, no finding, the cursor where it was.
func TestConfigErrorStopsSweepAndWritesNothing(t *testing.T) {
	t.Parallel()
	rows := uniform(300)
	rows[0] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
	b := setup(t, rows)
	b.gw.failAll(&payrecon.ConfigError{StatusCode: 401, Cause: "Stripe rejected the API key; check STRIPE_SECRET_KEY"})
	_, err := b.sweeper(sweep.Config{Batch: 100}).RunCycle(context.Background(), nil)
	if !errors.Is(err, payrecon.ErrConfig) {
		t.Fatalf("err = %v, want a configuration error", err)
	}
	if got := err.Error(); !contains(got, "STRIPE_SECRET_KEY") || !contains(got, "401") {
		t.Errorf("error %q does not name the cause", got)
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
		t.Errorf("%d rows verified", n)
	}
	if n := b.count(t, "SELECT (SELECT count(*) FROM reconciliation_findings) + (SELECT count(*) FROM outbox) + (SELECT count(*) FROM reconciliation_recheck)"); n != 0 {
		t.Errorf("%d findings, commands or rechecks written", n)
	}
	if c := b.cursor(t, sweep.DefaultJob); c != 0 {
		t.Errorf("cursor at %d, want 0", c)
	}
	if calls := b.gw.calls.Load(); calls > 100 {
		t.Errorf("%d Stripe calls after a 401, want it to stop within the batch", calls)
	}
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || index(s, sub) >= 0) }
func index(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Findings are recorded once however many sweeps see them, and a repair
// command is queued only with a new finding.
func TestFindingsNotDuplicatedAcrossSweeps(t *testing.T) {
	t.Parallel()
	rows := uniform(40)
	rows[1] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
	rows[2] = row{payrecon.StatusPaid, payrecon.IntentRequiresPaymentMethod}
	b := setup(t, rows)
	s := b.sweeper(sweep.Config{Batch: 15})
	for i := 0; i < 4; i++ {
		rep, err := s.RunCycle(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && (rep.NewFindings != 0 || rep.Commands != 0) {
			t.Errorf("cycle %d: %d new findings, %d commands; want none", i, rep.NewFindings, rep.Commands)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings"); n != 2 {
		t.Errorf("%d findings, want 2", n)
	}
	if n := b.count(t, "SELECT count(*) FROM outbox"); n != 1 {
		t.Errorf("%d commands, want 1", n)
	}
}

// Design item 8: a finding closes itself, with a reason, when a later sweep
// sees the row in sync; and is superseded when the drift changes kind.
func TestFindingsResolveWhenDriftHeals(t *testing.T) {
	t.Parallel()
	rows := uniform(10)
	rows[0] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
	rows[1] = row{payrecon.StatusPaid, payrecon.IntentProcessing}
	b := setup(t, rows)
	s := b.sweeper(sweep.Config{Batch: 50, Grace: time.Nanosecond})
	ctx := context.Background()
	if _, err := s.RunCycle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The late webhook arrives (through the canonical writer), and Stripe
	// catches up on the second row.
	w := postgres.NewWriter(nil)
	if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		_, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: b.ids[0]})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	b.gw.set("pi_00002", payrecon.IntentSucceeded)
	rep, err := s.RunCycle(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resolved != 2 {
		t.Errorf("resolved %d findings, want 2", rep.Resolved)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NOT NULL AND resolution = 'healed'"); n != 2 {
		t.Errorf("%d findings healed, want 2", n)
	}
	// Now the first payment's intent is refunded-and-canceled in Stripe: a
	// new kind of drift on a row with no open finding, and a changed kind on
	// a row that has one.
	b.gw.set("pi_00001", payrecon.IntentCanceled)
	if _, err := s.RunCycle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	b.gw.set("pi_00001", payrecon.IntentRequiresCapture)
	if _, err := s.RunCycle(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1 AND resolved_at IS NULL", b.ids[0]); n != 1 {
		t.Errorf("%d open findings on the paid-but-not-captured row, want 1", n)
	}
}

func TestGraceWindowIsInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t, []row{{payrecon.StatusPending, payrecon.IntentSucceeded}, {payrecon.StatusPaid, payrecon.IntentSucceeded}})
	pgxExec(t, b, "UPDATE payments SET updated_at = now() WHERE id = $1", b.ids[0])
	rep, err := b.sweeper(sweep.Config{Batch: 10, Grace: 10 * time.Minute}).RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Counts[payrecon.InFlight] != 1 || rep.Verified != 1 {
		t.Errorf("report = %+v", rep)
	}
	if b.gw.calls.Load() != 1 {
		t.Errorf("%d Stripe calls; a row in the grace window is not asked about", b.gw.calls.Load())
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE id = $1 AND last_reconciled_at IS NULL", b.ids[0]); n != 1 {
		t.Error("a row in the grace window was marked verified")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck WHERE payment_id = $1 AND reason = 'grace' AND due_at > now() + interval '9 minutes'", b.ids[0]); n != 1 {
		t.Error("grace-window row not queued for recheck after the window")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings"); n != 0 {
		t.Error("finding for a row in the grace window")
	}
}

// A webhook lands while Stripe is being asked about the row: the answer no
// longer describes the row, so it is neither verified nor a finding.
func TestRowChangedDuringCheckIsNotVerified(t *testing.T) {
	t.Parallel()
	b := setup(t, []row{{payrecon.StatusPending, payrecon.IntentSucceeded}})
	w := postgres.NewWriter(nil)
	b.gw.hook = func(ctx context.Context, id string) {
		if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{IntentID: id})
			return err
		}); err != nil {
			t.Error(err)
		}
	}
	rep, err := b.sweeper(sweep.Config{Batch: 10}).RunBatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified != 0 || rep.NewFindings != 0 || rep.Counts[payrecon.InFlight] != 1 {
		t.Errorf("report = %+v", rep)
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL AND status = 'paid'"); n != 1 {
		t.Error("a row that changed during the check was marked verified")
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck WHERE reason = 'changed'"); n != 1 {
		t.Error("changed row not queued for recheck")
	}
}

// Most calls failing is an outage: the batch is discarded, nothing is
// written and the cursor stays; RunCycle pauses and gives up after
// MaxOutage.
func TestSystemicFailurePausesWithoutAdvancing(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(100))
	b.gw.failAll(&payrecon.UnavailableError{StatusCode: 503, Err: errors.New("down")})
	// The outage is measured on the injected clock: each pause advances it
	// by exactly the pause, so the give-up point is deterministic.
	clock := testkit.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	start := clock.Now()
	var slept []time.Duration
	s := b.sweeper(sweep.Config{Batch: 50, MaxOutage: 5 * time.Minute, Clock: clock,
		SleepFunc: func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			clock.Advance(d)
			return ctx.Err()
		}})
	_, err := s.RunBatch(context.Background())
	var sys *sweep.SystemicFailureError
	if !errors.As(err, &sys) || sys.Failed != 50 {
		t.Fatalf("err = %v, want a systemic failure of 50 calls", err)
	}
	if c := b.cursor(t, sweep.DefaultJob); c != 0 {
		t.Errorf("cursor advanced to %d during an outage", c)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_recheck"); n != 0 {
		t.Errorf("%d rechecks written for a discarded batch", n)
	}
	rep, err := s.RunCycle(context.Background(), nil)
	if !errors.Is(err, sweep.ErrOutage) {
		t.Fatalf("RunCycle err = %v, want ErrOutage", err)
	}
	// Pauses of 1 s doubling to the 1 min cap: 1+2+4+8+16+32+60+60+60 s is
	// 243 s; the last pause is cut to the 57 s left of the 5 minutes (no
	// pause runs past MaxOutage), and the batch after it gives up.
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, time.Minute, time.Minute, time.Minute, 57 * time.Second}
	if rep.Pauses != len(want) || !slices.Equal(slept, want) {
		t.Errorf("%d pauses %v, want %v", rep.Pauses, slept, want)
	}
	if elapsed := clock.Now().Sub(start); elapsed != 5*time.Minute {
		t.Errorf("gave up after %s of outage, want 5m", elapsed)
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
		t.Errorf("%d rows verified during an outage", n)
	}
}

func TestSweepResumesAfterOutage(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(100))
	b.gw.failAll(&payrecon.UnavailableError{StatusCode: 503, Err: errors.New("down")})
	pauses := 0
	s := b.sweeper(sweep.Config{Batch: 50, SleepFunc: func(ctx context.Context, d time.Duration) error {
		pauses++
		if pauses == 3 {
			b.gw.failAll(nil)
		}
		return nil
	}})
	rep, err := s.RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pauses != 3 || rep.Verified != 100 {
		t.Errorf("report = %+v", rep)
	}
}

// Stripe calls run concurrently up to the configured concurrency.
func TestCallsRunConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(64))
	const want = 8
	var (
		mu      sync.Mutex
		waiting int
		release = make(chan struct{})
	)
	b.gw.hook = func(ctx context.Context, id string) {
		mu.Lock()
		waiting++
		if waiting == want {
			close(release)
		}
		mu.Unlock()
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
	}
	if _, err := b.sweeper(sweep.Config{Batch: 64, Concurrency: want}).RunBatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := b.gw.maxIn.Load(); got != want {
		t.Errorf("at most %d calls in flight, want %d", got, want)
	}
}

// The batch's writes take the same number of round trips whatever its size.
func TestWriteRoundTripsConstantPerBatch(t *testing.T) {
	t.Parallel()
	counts := map[int]int64{}
	for _, n := range []int{5, 300} {
		rows := uniform(n)
		for i := 0; i < n; i += 3 {
			rows[i] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
		}
		b := setup(t, rows)
		tr := &countingTracer{}
		pool := tracedPool(t, b, tr)
		s := mustNew(postgres.NewStore(pool), b.gw, sweep.Config{Batch: n})
		if _, err := s.RunBatch(context.Background()); err != nil {
			t.Fatal(err)
		}
		counts[n] = tr.roundTrips.Load()
	}
	if counts[5] != counts[300] || counts[5] == 0 {
		t.Errorf("round trips per batch: %v; want the same for 5 and 300 rows", counts)
	}
}

func pgxExec(t *testing.T, b *testBundle, sql string, args ...any) {
	t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// cancelAfter answers from inner, and cancels the sweep's context once n
// calls were made, answering that call anyway: the context ends between
// two calls, while no call is failing.
type cancelAfter struct {
	inner  *fakeGateway
	n      int64
	calls  atomic.Int64
	cancel context.CancelFunc
}

func (g *cancelAfter) RetrieveIntent(_ context.Context, id string) (payrecon.Intent, error) {
	if g.calls.Add(1) == g.n {
		g.cancel()
	}
	return g.inner.RetrieveIntent(context.Background(), id)
}

func (g *cancelAfter) ListIntents(ctx context.Context, q payrecon.ListQuery) (payrecon.IntentPage, error) {
	return g.inner.ListIntents(ctx, q)
}

// A batch whose context ends while its rows are being retrieved is
// discarded whole: an error, and nothing written (not the rows checked, and
// above all not the rows never asked about).
func TestBatchCanceledBetweenCallsWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, uniform(50))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gw := &cancelAfter{inner: b.gw, n: 5, cancel: cancel}
	s := mustNew(b.store, gw, sweep.Config{Batch: 50, Concurrency: 2, Mode: sweep.ModeRetrieve})
	if _, err := s.RunBatch(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("RunBatch = %v, want the context's end", err)
	}
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
		t.Errorf("%d rows verified", n)
	}
	if n := b.count(t, "SELECT (SELECT count(*) FROM reconciliation_findings) + (SELECT count(*) FROM reconciliation_recheck)"); n != 0 {
		t.Errorf("%d findings or rechecks written", n)
	}
	if c := b.cursor(t, sweep.DefaultJob); c != 0 {
		t.Errorf("cursor at %d, want 0", c)
	}
	if calls := gw.calls.Load(); calls >= 50 {
		t.Errorf("%d calls: the sweep did not stop at the context's end", calls)
	}
}
