package sweep_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// A sweep inside your own service, on your own connection pool: one full
// cycle over payments (run it from your scheduler, or call Run for the
// continuous loop), its repairs delivered by the relay through the
// canonical writer. The database is migrated with `payrecon migrate`.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, databaseURL) // your application's DATABASE_URL
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	gw, err := stripeapi.New(stripeapi.Config{
		SecretKey: stripeSecretKey, // a restricted key: PaymentIntents, Charges, Events: Read
		APIBase:   stripeAPIBase,   // empty for https://api.stripe.com
	})
	if err != nil {
		log.Fatal(err)
	}
	// Repair commands get their River job in the batch's own transaction.
	rl, err := relay.New(pool, postgres.NewWriter(nil), relay.Config{Workers: 2})
	if err != nil {
		log.Fatal(err)
	}
	store := postgres.NewStore(pool)
	store.EnqueueFunc = rl.EnqueueFunc()
	cfg := sweep.DefaultConfig()
	cfg.Job = "payments-vs-stripe"
	cfg.Limiter = budget.NewLimiter(20) // Stripe requests per second, shared by every call
	cfg.LeaseFunc = func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLease(ctx, pool, job, wait) // one sweeper per job, however many replicas
	}
	s, err := sweep.New(store, gw, cfg)
	if err != nil {
		log.Fatal(err)
	}
	rep, err := s.RunCycle(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("checked %d payments: %d in sync, %d repairable; %d repair queued\n",
		rep.Scanned, rep.Counts[payrecon.InSync], rep.Counts[payrecon.Repairable], rep.Commands)

	// Apply what is due and stop (Start runs the workers for good instead).
	drained, err := rl.Drain(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("repairs applied: %d\n", drained.Applied)
	// Output:
	// checked 3 payments: 2 in sync, 1 repairable; 1 repair queued
	// repairs applied: 1
}
