package settlement_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// testBundle is one test's real parts: a fresh database whose payments
// carry an amount and a currency, the simulator on a settable clock, the
// stripe-go gateway to it, and the settlement store.
type testBundle struct {
	pool  *pgxpool.Pool
	sim   *stripesim.Server
	gw    *stripeapi.Gateway
	clock *testkit.Clock
	store *postgres.Payouts
}

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func setup(t testing.TB, faults stripesim.Faults) *testBundle {
	t.Helper()
	b := &testBundle{pool: pgtest.NewDB(t), clock: testkit.NewClock(start)}
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN amount bigint, ADD COLUMN currency text")
	b.sim = simtest.Start(t, stripesim.Config{Clock: b.clock, Faults: faults})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	gw, err := stripeapi.New(stripeapi.Config{SecretKey: b.sim.SecretKey(), APIBase: b.sim.URL(), HTTPClient: &http.Client{Transport: tr},
		MaxRetries: -1, Clock: b.clock})
	if err != nil {
		t.Fatal(err)
	}
	b.gw = gw
	cols, err := postgres.DetectMoneyColumns(context.Background(), b.pool, "amount", "currency")
	if err != nil {
		t.Fatal(err)
	}
	b.store = postgres.NewPayouts(b.pool).WithMoneyColumns(cols)
	return b
}

// reconciler is a payouts check on the bundle with the default rules.
func (b *testBundle) reconciler(edit func(*settlement.Config)) *settlement.Reconciler {
	cfg := settlement.Config{Clock: b.clock,
		Checks: payrecon.SettlementChecks{Amount: true, Currency: true, SettleAfter: payrecon.DefaultSettleAfter}}
	if edit != nil {
		edit(&cfg)
	}
	return settlement.New(b.gw, b.store, cfg)
}

// payment is a local row and its intent in the simulator.
type payment struct {
	intent   string
	status   payrecon.LocalStatus
	amount   int64 // local amount; Stripe's is stripe (or amount)
	stripe   int64
	created  time.Time
	observed payrecon.StripeStatus
	noRow    bool // only in Stripe
	notInSim bool // only locally
}

// add stores the payments: the rows (unless noRow) and succeeded intents
// (unless notInSim). It returns the payment ids by intent.
func (b *testBundle) add(t *testing.T, ps ...payment) map[string]int64 {
	t.Helper()
	ids := map[string]int64{}
	for i, p := range ps {
		created := p.created
		if created.IsZero() {
			created = b.clock.Now().Add(-time.Hour)
		}
		if !p.notInSim {
			amount := p.amount
			if p.stripe != 0 {
				amount = p.stripe
			}
			if _, err := b.sim.Create(stripesim.Intent{ID: p.intent, Amount: amount, Status: payrecon.IntentSucceeded,
				Created: created}); err != nil {
				t.Fatal(err)
			}
		}
		if p.noRow {
			continue
		}
		var id int64
		err := b.pool.QueryRow(context.Background(), `INSERT INTO payments (order_id, stripe_payment_intent_id, status, created_at, updated_at,
			amount, currency, observed_external_status) VALUES ($1, $2, $3, $4, $4, $5, 'usd', $6) RETURNING id`,
			fmt.Sprintf("order_%s_%d", p.intent, i), p.intent, string(p.status), created, p.amount, nullable(string(p.observed))).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		ids[p.intent] = id
	}
	return ids
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// payout settles intents in a payout created now.
func (b *testBundle) payout(t *testing.T, spec stripesim.PayoutSpec) stripesim.Payout {
	t.Helper()
	if spec.Created.IsZero() {
		spec.Created = b.clock.Now()
	}
	p, err := b.sim.CreatePayout(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// finding is an open or resolved settlement finding as the tests compare it.
type finding struct {
	kind, intent string
	payment      *int64
	open         bool
	resolution   string
}

func (b *testBundle) findings(t *testing.T) []finding {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT kind, stripe_payment_intent_id, payment_id, resolved_at IS NULL, coalesce(resolution, '')
		FROM reconciliation_findings WHERE kind = ANY($1) ORDER BY id`, []string{
		string(payrecon.KindSettledNotPaidLocally), string(payrecon.KindSettledAmountMismatch), string(payrecon.KindPaidNotSettled)})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []finding
	for rows.Next() {
		var f finding
		if err := rows.Scan(&f.kind, &f.intent, &f.payment, &f.open, &f.resolution); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// open returns the open settlement findings as "kind intent".
func (b *testBundle) open(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range b.findings(t) {
		if f.open {
			out[f.kind+" "+f.intent] = true
		}
	}
	return out
}

func round(t *testing.T, r *settlement.Reconciler) settlement.Report {
	t.Helper()
	rep, err := r.RunOnce(context.Background())
	if err != nil {
		t.Fatalf("round: %v (%+v)", err, rep)
	}
	return rep
}
