package sweep_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/stripesim"
)

// No test may leave a goroutine behind: the sweep starts one per Stripe
// call, and a lease holds a connection. The examples' fixture is built
// first and torn down before the check.
func TestMain(m *testing.M) {
	done, err := exampleFixture()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example fixture:", err)
		os.Exit(1)
	}
	code := m.Run()
	done()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// What the examples connect to: a migrated database of their own, and the
// Stripe simulator standing in for api.stripe.com.
var databaseURL, stripeSecretKey, stripeAPIBase string

// exampleFixture seeds three payments, one of them pending locally but
// paid in Stripe (a lost payment_intent.succeeded webhook).
func exampleFixture() (func(), error) {
	ctx := context.Background()
	u, drop, err := pgtest.Create()
	if err != nil {
		return nil, err
	}
	sim, err := stripesim.Start(stripesim.Config{})
	if err != nil {
		_ = drop()
		return nil, err
	}
	done := func() {
		sim.Close()
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		done()
		return nil, err
	}
	defer pool.Close()
	old := time.Now().Add(-time.Hour)
	var ps []pgtest.Payment
	for i, st := range []payrecon.LocalStatus{payrecon.StatusPending, payrecon.StatusPaid, payrecon.StatusPaid} {
		id := fmt.Sprintf("pi_example_%d", i)
		ps = append(ps, pgtest.Payment{IntentID: id, Status: st, CreatedAt: old, UpdatedAt: old})
		sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: old, Amount: 1000, Currency: "usd"})
	}
	if _, err := pgtest.CopyPayments(ctx, pool, ps); err != nil {
		done()
		return nil, err
	}
	databaseURL, stripeSecretKey, stripeAPIBase = u, sim.SecretKey(), sim.URL()
	return done, nil
}
