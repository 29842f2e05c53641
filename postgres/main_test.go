package postgres_test

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
)

// TestMain builds the examples' database first and drops it afterwards,
// then checks that no test left a goroutine running (goleak).
func TestMain(m *testing.M) {
	drop, err := exampleFixture()
	if err != nil {
		fmt.Fprintln(os.Stderr, "example fixture:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if code == 0 {
		if err := goleak.Find(
			// pgx pools of finished tests close their connections asynchronously.
			goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// databaseURL is the examples' migrated database: one pending payment,
// whose PaymentIntent pi_example Stripe reports succeeded.
var databaseURL string

func exampleFixture() (func() error, error) {
	u, drop, err := pgtest.Create()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		_ = drop()
		return nil, err
	}
	defer pool.Close()
	old := time.Now().Add(-time.Hour)
	if _, err := pgtest.CopyPayments(ctx, pool, []pgtest.Payment{{IntentID: "pi_example", Status: payrecon.StatusPending, CreatedAt: old, UpdatedAt: old}}); err != nil {
		_ = drop()
		return nil, err
	}
	databaseURL = u
	return drop, nil
}
