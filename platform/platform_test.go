package platform_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/simtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/platform"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/stripesim"
	"github.com/payrecon/payrecon/sweep"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

type bundle struct {
	url  string
	pool *pgxpool.Pool
	sim  *stripesim.Server
	gw   *stripeapi.Gateway
	col  postgres.AccountColumn
	// conns is each replica's pool size (default 20).
	conns int32
}

// setup makes payments with the account column and, for each account, n
// rows: local pending, Stripe succeeded for every third (missed_success),
// in sync otherwise; their intents live on their accounts in the simulator.
func setup(t *testing.T, rows map[string]int) *bundle {
	t.Helper()
	ctx := context.Background()
	b := &bundle{url: pgtest.NewURL(t)}
	b.pool = pool(t, b.url, 20)
	b.sim = simtest.Start(t, stripesim.Config{Seed: 3})
	pgtest.Exec(t, b.pool, "ALTER TABLE payments ADD COLUMN stripe_account_id text")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for acct, n := range rows {
		ps := make([]pgtest.Payment, n)
		for i := range ps {
			id := fmt.Sprintf("pi_%s_%04d", acct, i)
			st, local := payrecon.IntentRequiresPaymentMethod, payrecon.StatusPending
			if i%3 == 0 {
				st = payrecon.IntentSucceeded
			}
			ps[i] = pgtest.Payment{IntentID: id, Status: local, CreatedAt: old.Add(time.Duration(i) * time.Second)}
			b.sim.Put(stripesim.Intent{ID: id, Status: st, Account: acct, Created: old.Add(time.Duration(i) * time.Second)})
		}
		ids := pgtest.InsertPayments(t, b.pool, ps)
		if acct != "" {
			pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_account_id = $1 WHERE id = ANY($2)", acct, ids)
		}
	}
	var err error
	if b.col, err = postgres.DetectAccountColumn(ctx, b.pool, postgres.AccountColumnDefault); err != nil || !b.col.Found {
		t.Fatalf("detect: %+v, %v", b.col, err)
	}
	if _, err := postgres.EnsureAccountIndex(ctx, b.pool, b.col); err != nil {
		t.Fatal(err)
	}
	b.gw, err = stripeapi.New(stripeapi.Config{SecretKey: b.sim.SecretKey(), APIBase: b.sim.URL(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pool(t *testing.T, url string, conns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = conns
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// replica starts one replica's relay (River client) with the platform's
// jobs, and its heartbeat; it stops when the test ends (or stop is called).
func (b *bundle) replica(t *testing.T, name string, edit func(*platform.Config)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := pool(t, b.url, cmp.Or(b.conns, 20))
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store := postgres.NewStore(p)
	cfg := platform.Config{
		Job: sweep.DefaultJob, Accounts: b.col, Store: store, Pool: p, Replica: name, Logger: logger,
		Gateway: func(account string, onRateLimited func(time.Duration)) payrecon.Gateway {
			return b.gw.ForAccount(account, onRateLimited)
		},
		Sweep:            sweep.Config{Batch: 10, Mode: sweep.ModeRetrieve, MinCycle: time.Hour},
		DiscoverInterval: time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	pl, err := platform.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := relay.New(p, postgres.NewWriter(nil), relay.Config{Workers: 2, Jobs: pl.Jobs(), Logger: logger,
		FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	store.EnqueueFunc = rl.EnqueueFunc()
	if err := rl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = pl.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		sctx, c := context.WithTimeout(context.Background(), 30*time.Second)
		defer c()
		_ = rl.Stop(sctx)
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// cycled counts the account jobs that completed a cycle.
func (b *bundle) cycled(t *testing.T) int {
	return pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_cursor WHERE job LIKE $1 AND last_cycle_completed_at IS NOT NULL", sweep.DefaultJob+"%")
}

// Two replicas sweep three accounts (the platform's own among them): each
// account's job completes a cycle, every request carries the row's own
// account, and the drift of each account is found once, under its job.
func TestReplicasSweepEveryAccount(t *testing.T) {
	t.Parallel()
	rows := map[string]int{"": 12, "acct_A": 31, "acct_B": 5}
	b := setup(t, rows)
	b.replica(t, "r1", nil)
	b.replica(t, "r2", nil)
	testkit.WaitFor(t, "every account's cycle", 60*time.Second, func() bool { return b.cycled(t) == 3 })
	if n := b.sim.Stats().WrongAccount; n != 0 {
		t.Fatalf("%d requests read an intent as the wrong account", n)
	}
	for acct, n := range rows {
		job := payrecon.AccountJob(sweep.DefaultJob, acct)
		want := (n + 2) / 3
		if got := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missed_success' AND job = $1", job); got != want {
			t.Errorf("account %q: %d missed_success findings under %s, want %d", acct, got, job, want)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE kind = 'missing_externally'"); n != 0 {
		t.Errorf("%d rows looked missing in Stripe: read under the wrong account", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); n != 0 {
		t.Errorf("%d rows never verified", n)
	}
}

// A new account is swept within a discovery interval of its first row.
func TestNewAccountIsPickedUp(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]int{"acct_A": 3})
	b.replica(t, "r1", nil)
	testkit.WaitFor(t, "acct_A's cycle", 30*time.Second, func() bool { return b.cycled(t) == 1 })
	id := pgtest.InsertPayments(t, b.pool, []pgtest.Payment{{IntentID: "pi_new", Status: payrecon.StatusPaid, CreatedAt: time.Now().Add(-time.Hour)}})
	pgtest.Exec(t, b.pool, "UPDATE payments SET stripe_account_id = 'acct_New' WHERE id = $1", id[0])
	b.sim.Put(stripesim.Intent{ID: "pi_new", Status: payrecon.IntentSucceeded, Account: "acct_New"})
	testkit.WaitFor(t, "acct_New's cycle", 30*time.Second, func() bool { return b.cycled(t) == 2 })
	if n := b.sim.Stats().WrongAccount; n != 0 {
		t.Fatalf("%d wrong-account reads", n)
	}
}
