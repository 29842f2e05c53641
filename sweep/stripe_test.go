package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

// Tests through the real gateway (stripe-go) against the simulator over
// real HTTP on loopback.

type simBundle struct {
	*testBundle
	sim *stripesim.Server
	gw  *stripeapi.Gateway
}

// simRow is one payment: local status and created time, and what Stripe has
// (stripe "" = no intent) with its own created time.
type simRow struct {
	local        payrecon.LocalStatus
	stripe       payrecon.StripeStatus
	localCreated time.Time
	stripeCreat  time.Time
}

func setupSim(t *testing.T, rows []simRow, orphans []stripesim.Intent, faults stripesim.Faults) *simBundle {
	t.Helper()
	b := setup(t, nil)
	sim := simtest.Start(t, stripesim.Config{Seed: 7})
	ps := make([]pgtest.Payment, len(rows))
	for i, r := range rows {
		id := fmt.Sprintf("pi_sim_%06d", i)
		ps[i] = pgtest.Payment{IntentID: id, Status: r.local, CreatedAt: r.localCreated}
		if r.stripe != "" {
			sim.Put(stripesim.Intent{ID: id, Status: r.stripe, Created: r.stripeCreat})
		}
	}
	for _, o := range orphans {
		sim.Put(o)
	}
	if len(ps) > 0 {
		b.ids = pgtest.InsertPayments(t, b.pool, ps)
	}
	gw, err := stripeapi.New(stripeapi.Config{
		SecretKey:   sim.SecretKey(),
		APIBase:     sim.URL(),
		Timeout:     2 * time.Second,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	sim.SetFaults(faults)
	return &simBundle{testBundle: b, sim: sim, gw: gw}
}

func (b *simBundle) sweeper(cfg sweep.Config) *sweep.Sweeper {
	if cfg.SleepFunc == nil {
		cfg.SleepFunc = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	}
	return mustNew(b.store, b.gw, cfg)
}

func simpleRows(n int, drift func(i int) (payrecon.LocalStatus, payrecon.StripeStatus)) []simRow {
	base := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	rows := make([]simRow, n)
	for i := range rows {
		l, s := payrecon.StatusPaid, payrecon.IntentSucceeded
		if drift != nil {
			l, s = drift(i)
		}
		c := base.Add(time.Duration(i) * time.Second)
		rows[i] = simRow{local: l, stripe: s, localCreated: c, stripeCreat: c}
	}
	return rows
}

// Every error class, end to end through stripe-go: what the row becomes.
func TestErrorClassesThroughRealGateway(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		failure stripesim.Failure
		verdict payrecon.Verdict
		kind    payrecon.Kind
		config  bool
	}{
		{"401 bad key", stripesim.Failure{Status: http.StatusUnauthorized}, "", "", true},
		{"403 restricted key", stripesim.Failure{Status: http.StatusForbidden}, "", "", true},
		{"400 bad request", stripesim.Failure{Status: http.StatusBadRequest}, "", "", true},
		{"404 not found", stripesim.Failure{Status: http.StatusNotFound}, payrecon.NeedsReview, payrecon.KindMissingExternally, false},
		{"429 rate limited", stripesim.Failure{Status: http.StatusTooManyRequests}, payrecon.Unverifiable, "", false},
		{"500 api error", stripesim.Failure{Status: http.StatusInternalServerError}, payrecon.Unverifiable, "", false},
		{"503 html", stripesim.Failure{Status: http.StatusServiceUnavailable}, payrecon.Unverifiable, "", false},
		{"hang past the timeout", stripesim.Failure{Hang: true}, payrecon.Unverifiable, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rows := simpleRows(20, func(i int) (payrecon.LocalStatus, payrecon.StripeStatus) {
				if i == 3 {
					return payrecon.StatusPending, payrecon.IntentSucceeded
				}
				return payrecon.StatusPaid, payrecon.IntentSucceeded
			})
			b := setupSim(t, rows, nil, stripesim.Faults{})
			if c.failure.Hang {
				gw, err := stripeapi.New(stripeapi.Config{SecretKey: b.sim.SecretKey(), APIBase: b.sim.URL(),
					Timeout: 200 * time.Millisecond, MaxRetries: -1})
				if err != nil {
					t.Fatal(err)
				}
				b.gw = gw
			}
			b.sim.FailID("pi_sim_000003", c.failure)
			rep, err := b.sweeper(sweep.Config{Batch: 50, Mode: sweep.ModeRetrieve}).RunBatch(context.Background())
			if c.config {
				if !errors.Is(err, payrecon.ErrConfig) {
					t.Fatalf("err = %v, want a configuration error", err)
				}
				if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL"); n != 0 {
					t.Errorf("%d rows verified after a configuration error", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rep.Counts[c.verdict] != 1 {
				t.Errorf("counts %v, want one %s", rep.Counts, c.verdict)
			}
			verified := b.count(t, "SELECT count(*) FROM payments WHERE id = $1 AND last_reconciled_at IS NOT NULL", b.ids[3])
			if (c.verdict == payrecon.Unverifiable) == (verified == 1) {
				t.Errorf("row verified = %d with verdict %s", verified, c.verdict)
			}
			findings := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE payment_id = $1", b.ids[3])
			if c.kind == "" && findings != 0 || c.kind != "" && findings != 1 {
				t.Errorf("%d findings for the row, want kind %q", findings, c.kind)
			}
		})
	}
}

// A 401 on every call: the cycle stops at once and writes nothing.
func TestUnauthorizedStopsCycleThroughRealGateway(t *testing.T) {
	t.Parallel()
	b := setupSim(t, simpleRows(500, nil), nil, stripesim.Faults{Unauthorized: true})
	_, err := b.sweeper(sweep.Config{Batch: 100}).RunCycle(context.Background(), nil)
	var ce *payrecon.ConfigError
	if !errors.As(err, &ce) || ce.StatusCode != 401 {
		t.Fatalf("err = %v, want a 401 configuration error", err)
	}
	if n := b.count(t, `SELECT (SELECT count(*) FROM payments WHERE last_reconciled_at IS NOT NULL)
		+ (SELECT count(*) FROM reconciliation_findings) + (SELECT count(*) FROM reconciliation_recheck)`); n != 0 {
		t.Errorf("%d rows written after a 401", n)
	}
	if total := b.sim.Stats().Total(); total > 2 {
		t.Errorf("%d requests after a 401; the sweep must stop at once", total)
	}
}

// verifiedMatchesStripe: every row marked verified carries exactly what
// Stripe says now, and no unverified row claims an observation.
func verifiedMatchesStripe(t *testing.T, b *simBundle) (verified int) {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT stripe_payment_intent_id, observed_external_status, last_reconciled_at IS NOT NULL FROM payments")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var observed *string
		var ok bool
		if err := rows.Scan(&id, &observed, &ok); err != nil {
			t.Fatal(err)
		}
		if !ok {
			if observed != nil {
				t.Errorf("%s: observed %q but not verified", id, *observed)
			}
			continue
		}
		verified++
		in, found := b.sim.Get(id)
		want := string(payrecon.NotFound)
		if found {
			want = string(in.Status)
		}
		if observed == nil || *observed != want {
			t.Errorf("%s verified as %v, Stripe says %s", id, observed, want)
		}
	}
	return verified
}

// A 50 % 5xx storm: no row verified that was not read, no false finding,
// and the rows that failed are rechecked until the cycle is complete.
func TestHalfOfCallsFailingStorm(t *testing.T) {
	t.Parallel()
	rows := simpleRows(400, func(i int) (payrecon.LocalStatus, payrecon.StripeStatus) {
		if i%10 == 0 {
			return payrecon.StatusPending, payrecon.IntentSucceeded
		}
		return payrecon.StatusPaid, payrecon.IntentSucceeded
	})
	b := setupSim(t, rows, nil, stripesim.Faults{ErrorRate: 0.5, ErrorStatus: 500})
	rep, err := b.sweeper(sweep.Config{Batch: 50, Mode: sweep.ModeRetrieve, RecheckBackoff: time.Millisecond, RecheckBackoffMax: time.Millisecond}).
		RunCycle(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.sim.Stats().Status(500); got < 100 {
		t.Fatalf("only %d 500s served: the storm did not happen", got)
	}
	verified := verifiedMatchesStripe(t, b)
	if verified+rep.StillUnverifiable != 400 {
		t.Errorf("%d verified + %d still unverifiable, want 400", verified, rep.StillUnverifiable)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id WHERE p.status <> 'pending' OR f.kind <> 'missed_success'"); n != 0 {
		t.Errorf("%d false findings", n)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings"); n > 40 {
		t.Errorf("%d findings for 40 drifted rows", n)
	}
	t.Logf("storm: %d verified, %d still unverifiable, %d rechecked, %d 500s served", verified, rep.StillUnverifiable, rep.Rechecked, b.sim.Stats().Status(500))
}

// Stripe's 429s slow the shared limiter down, and the sweep still
// completes with every row verified.
func TestRateLimitSlowsTheLimiterAndSweepCompletes(t *testing.T) {
	t.Parallel()
	b := setupSim(t, simpleRows(300, nil), nil, stripesim.Faults{RateLimit: stripesim.RateLimit{PerSecond: 200, Burst: 5}})
	lim := budget.NewLimiter(2000)
	s := b.sweeper(sweep.Config{Batch: 100, Concurrency: 8, Mode: sweep.ModeRetrieve,
		RecheckBackoff: time.Millisecond, RecheckBackoffMax: 10 * time.Millisecond, Limiter: lim})
	// The limiter is watched all through the cycle, not only between
	// batches: on a loaded machine the only 429s may come in the cycle's
	// last rechecks, after the last batch.
	var (
		lowest  = lim.Limit()
		done    = make(chan struct{})
		watched = make(chan struct{})
	)
	go func() {
		defer close(watched)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			lowest = min(lowest, lim.Limit())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	rep, err := s.RunCycle(context.Background(), nil)
	close(done)
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if b.sim.Stats().Status(429) == 0 {
		t.Fatal("the simulator never answered 429")
	}
	if lowest >= 2000 {
		t.Errorf("limiter never slowed down (lowest %g/s)", lowest)
	}
	if v := verifiedMatchesStripe(t, b); v != 300 || rep.StillUnverifiable != 0 {
		t.Errorf("%d verified, %d still unverifiable; want all 300", v, rep.StillUnverifiable)
	}
}

// Property: on the same data, list mode and retrieve mode record the same
// findings and verify the same rows with the same observations, whatever
// the skew between local and Stripe creation times; list mode also reports
// the intents with no local row.
func TestListAndRetrieveModesAgree(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, seed*7919))
			statuses := append(append([]payrecon.StripeStatus{}, payrecon.StripeStatuses...), "", "")
			locals := payrecon.LocalStatuses
			base := time.Now().Add(-100 * 24 * time.Hour).Truncate(time.Second)
			n := 150 + rng.IntN(250)
			rows := make([]simRow, n)
			at := base
			for i := range rows {
				at = at.Add(time.Duration(rng.IntN(120)) * time.Second)
				skew := time.Duration(rng.NormFloat64() * float64(30*time.Second))
				if rng.IntN(20) == 0 {
					skew = time.Duration(rng.IntN(48)-24) * time.Hour // far outside any margin
				}
				rows[i] = simRow{local: locals[rng.IntN(len(locals))], stripe: statuses[rng.IntN(len(statuses))],
					localCreated: at, stripeCreat: at.Add(skew).Truncate(time.Second)}
			}
			var orphans []stripesim.Intent
			for i := 0; i < 10; i++ {
				orphans = append(orphans, stripesim.Intent{ID: fmt.Sprintf("pi_orphan_%d", i),
					Status: payrecon.IntentSucceeded, Created: base.Add(time.Duration(rng.IntN(int(at.Sub(base).Seconds()))) * time.Second)})
			}
			batch := 20 + rng.IntN(100)

			// Money: random amounts on both sides, refunds and disputes, so
			// that every money kind occurs and both modes must agree on them.
			type money struct {
				local, asked, received, refunded int64
				localCur, cur                    string
				disputed                         bool
			}
			monies := make([]money, n)
			for i := range monies {
				m := money{local: 1000 + int64(rng.IntN(3)), asked: 1000 + int64(rng.IntN(3)), localCur: "usd", cur: "usd"}
				m.received = m.asked - int64(rng.IntN(2))
				if rng.IntN(5) == 0 {
					m.localCur = "JPY"
				}
				if rows[i].stripe == payrecon.IntentSucceeded {
					m.refunded = []int64{0, 0, 1, m.received}[rng.IntN(4)]
					m.disputed = rng.IntN(6) == 0
				}
				monies[i] = m
			}
			// The first five rows carry one money kind each, so that every
			// kind is in every sample.
			for i, m := range []money{
				{local: 999, asked: 1000, received: 1000, localCur: "usd", cur: "usd"},
				{local: 1000, asked: 1000, received: 1000, localCur: "eur", cur: "usd"},
				{local: 1000, asked: 1000, received: 1000, refunded: 1000, localCur: "usd", cur: "usd"},
				{local: 1000, asked: 1000, received: 1000, refunded: 10, localCur: "usd", cur: "usd"},
				{local: 1000, asked: 1000, received: 1000, disputed: true, localCur: "USD", cur: "usd"},
			} {
				rows[i].local, rows[i].stripe, monies[i] = payrecon.StatusPaid, payrecon.IntentSucceeded, m
			}

			results := map[sweep.Mode][]string{}
			for _, mode := range []sweep.Mode{sweep.ModeRetrieve, sweep.ModeList, sweep.ModeAuto} {
				b := setupSim(t, rows, orphans, stripesim.Faults{})
				pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
				for i, r := range rows {
					m := monies[i]
					pgtest.Exec(t, b.pool, "UPDATE payments SET amount = $2, currency = $3 WHERE id = $1", b.ids[i], m.local, m.localCur)
					if r.stripe != "" {
						b.sim.Put(stripesim.Intent{ID: fmt.Sprintf("pi_sim_%06d", i), Status: r.stripe, Created: r.stripeCreat,
							Amount: m.asked, AmountReceived: m.received, Currency: m.cur, AmountRefunded: m.refunded, Disputed: m.disputed})
					}
				}
				cols, err := postgres.DetectMoneyColumns(context.Background(), b.pool, "amount", "currency")
				if err != nil {
					t.Fatal(err)
				}
				b.store = b.store.WithMoneyColumns(cols)
				rep, err := b.sweeper(sweep.Config{Batch: batch, Mode: mode, Money: cols.Checks(nil)}).RunCycle(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if v := verifiedMatchesStripe(t, b); v != n {
					t.Errorf("%s: %d of %d rows verified", mode, v, n)
				}
				results[mode] = snapshot(t, b)
				orph := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND payment_id IS NULL AND stripe_payment_intent_id LIKE 'pi_orphan_%'")
				bogus := b.count(t, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_locally' AND stripe_payment_intent_id NOT LIKE 'pi_orphan_%'")
				if bogus != 0 {
					t.Errorf("%s: %d intents with a local row reported missing_locally", mode, bogus)
				}
				if mode == sweep.ModeRetrieve && orph != 0 {
					t.Errorf("retrieve mode cannot see orphans, yet reported %d", orph)
				}
				if mode == sweep.ModeList && orph < 8 {
					t.Errorf("list mode reported %d of the 10 orphans inside the data's time range", orph)
				}
				t.Logf("%s: %d Stripe requests for %d rows", mode, rep.StripeCalls, n)
			}
			for _, k := range payrecon.MoneyKinds {
				if !strings.Contains(fmt.Sprint(results[sweep.ModeRetrieve]), " "+string(k)+" ") {
					t.Errorf("no %s finding in the sample: the property says nothing about it", k)
				}
			}
			for _, mode := range []sweep.Mode{sweep.ModeList, sweep.ModeAuto} {
				if fmt.Sprint(results[mode]) != fmt.Sprint(results[sweep.ModeRetrieve]) {
					t.Errorf("%s mode disagrees with retrieve mode:\n%v\nvs\n%v", mode, results[mode], results[sweep.ModeRetrieve])
				}
			}
		})
	}
}

// snapshot lists every finding (except missing_locally, which only list
// mode can see) and every observation, in a stable order.
func snapshot(t *testing.T, b *simBundle) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `
		SELECT 'F ' || p.stripe_payment_intent_id || ' ' || f.kind || ' ' || coalesce(f.external_status, '-') || ' ' || coalesce((f.details #- '{charge,observed_at}')::text, '-')
		  FROM reconciliation_findings f JOIN payments p ON p.id = f.payment_id
		UNION ALL
		SELECT 'O ' || stripe_payment_intent_id || ' ' || coalesce(observed_external_status, '-') FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

var _ = postgres.NewStore
