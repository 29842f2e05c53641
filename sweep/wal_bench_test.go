package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pglocal"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// walCost is what one sweep cycle cost payments' database.
type walCost struct {
	bytes     int64 // WAL written during the cycle
	fpi       int64 // full-page images among it (pg_stat_wal.wal_fpi)
	upd, hot  int64 // pg_stat_user_tables: payments updates, HOT ones
	verified  int
	walPerRow float64
	hotRatio  float64
}

// BenchmarkSweepWAL measures the WAL a steady-state sweep cycle writes per
// verified row, and the share of HOT updates of payments, with and without
// the payments_reconciled_order index (dropped by migration 00015): 100 k
// rows in sync, an instant in-memory gateway, retrieve mode, batch 200. It
// runs on a throwaway cluster of its own (internal/pglocal, with
// full_page_writes on as by default), so the WAL counted (a
// pg_current_wal_insert_lsn difference) is the sweep's alone. Cycle 1
// verifies every row for the first time; a VACUUM stands in for
// autovacuum; cycle 2 starts right after a CHECKPOINT (every page's first
// change then carries a full-page image: the worst case), cycle 3 follows
// it (few full-page images: pages already logged since the checkpoint), and
// cycles 4 to 8 each follow a VACUUM (autovacuum's part): the steady state,
// once updated rows have spread so that their pages have room for a new
// version (a HOT update needs it on the same page).
//
// A third run has no index and a fillfactor of 90 on payments (set before
// it is filled, as an application may choose): pages keep room for new row
// versions from the start, the state the table without fillfactor
// converges to. PAYRECON_BENCH_CYCLES runs more cycles than 8.
//
//	go test -run '^$' -bench SweepWAL -benchtime 1x ./sweep
func BenchmarkSweepWAL(b *testing.B) {
	cycles := 8
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_CYCLES")); err == nil && v > 3 {
		cycles = v
	}
	ctx := context.Background()
	cl, err := pglocal.StartCluster(ctx, nil, "full_page_writes=on", "max_wal_size=4GB", "checkpoint_timeout=1h")
	if errors.Is(err, pglocal.ErrNotInstalled) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Stop)
	for _, v := range []struct {
		withIndex  bool
		fillfactor int
	}{{true, 100}, {false, 100}, {false, 90}} {
		withIndex := v.withIndex
		b.Run(fmt.Sprintf("reconciled_order_index=%t/fillfactor=%d", withIndex, v.fillfactor), func(b *testing.B) {
			pool, gw := walDatabase(b, cl, v.fillfactor)
			if withIndex {
				pgtest.Exec(b, pool, "CREATE INDEX payments_reconciled_order ON payments ((coalesce(last_reconciled_at, created_at)))")
			}
			pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
			s := mustNew(postgres.NewStore(pool), gw, sweep.Config{Job: "wal", Batch: 200, Concurrency: 8, Mode: sweep.ModeRetrieve, Grace: sweep.Off})
			cycle := func() int {
				rep, err := s.RunCycle(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				return rep.Verified
			}
			b.ResetTimer()
			for b.Loop() {
				cycle()
				pgtest.Exec(b, pool, "VACUUM payments")
				for i := 2; i <= cycles; i++ {
					switch {
					case i == 2:
						pgtest.Exec(b, pool, "CHECKPOINT")
					case i > 3:
						pgtest.Exec(b, pool, "VACUUM payments") // autovacuum's part
					}
					c := measure(b, pool, cycle)
					b.Logf("cycle %d: %d rows verified, %.0f WAL bytes per verified row, %d full-page images, %d of %d updates HOT (%.1f %%)",
						i, c.verified, c.walPerRow, c.fpi, c.hot, c.upd, 100*c.hotRatio)
					if i == 2 || i == cycles {
						b.ReportMetric(c.walPerRow, fmt.Sprintf("WAL-B/row-cycle%d", i))
						b.ReportMetric(100*c.hotRatio, fmt.Sprintf("HOT-%%-cycle%d", i))
					}
				}
			}
		})
	}
}

// walDatabase empties the cluster's database, migrates it, and fills
// payments with 100 k paid rows (fillfactor set first when not 100) that
// the returned gateway says are succeeded. The pool closes with b.
func walDatabase(b *testing.B, cl *pglocal.Cluster, fillfactor int) (*pgxpool.Pool, *fakeGateway) {
	b.Helper()
	const n = 100_000
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cl.URL())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	pgtest.Exec(b, pool, "DROP SCHEMA public CASCADE")
	pgtest.Exec(b, pool, "CREATE SCHEMA public")
	pgtest.Exec(b, pool, "DROP TABLE IF EXISTS payrecon_schema_migrations")
	pgtest.Exec(b, pool, "DROP SCHEMA IF EXISTS river CASCADE")
	if _, err := postgres.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		b.Fatal(err)
	}
	gw := newFakeGateway()
	old := time.Now().Add(-time.Hour)
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		id := fmt.Sprintf("pi_%07d", i)
		ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPaid, CreatedAt: old}
		gw.set(id, payrecon.IntentSucceeded)
	}
	if fillfactor != 100 {
		pgtest.Exec(b, pool, fmt.Sprintf("ALTER TABLE payments SET (fillfactor = %d)", fillfactor))
	}
	pgtest.InsertPayments(b, pool, ps)
	return pool, gw
}

func measure(b *testing.B, pool *pgxpool.Pool, cycle func() int) walCost {
	b.Helper()
	ctx := context.Background()
	stats := func() (upd, hot, fpi int64) {
		time.Sleep(1500 * time.Millisecond) // backends flush their statistics at most once a second
		if err := pool.QueryRow(ctx, `SELECT pg_stat_clear_snapshot() IS NULL,
			(SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'payments'),
			(SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'payments'),
			(SELECT wal_fpi FROM pg_stat_wal)`).Scan(new(bool), &upd, &hot, &fpi); err != nil {
			b.Fatal(err)
		}
		return upd, hot, fpi
	}
	var start string
	upd0, hot0, fpi0 := stats()
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&start); err != nil {
		b.Fatal(err)
	}
	c := walCost{verified: cycle()}
	if err := pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", start).Scan(&c.bytes); err != nil {
		b.Fatal(err)
	}
	upd1, hot1, fpi1 := stats()
	c.upd, c.hot, c.fpi = upd1-upd0, hot1-hot0, fpi1-fpi0
	c.walPerRow = float64(c.bytes) / float64(max(c.verified, 1))
	if c.upd > 0 {
		c.hotRatio = float64(c.hot) / float64(c.upd)
	}
	return c
}

// BenchmarkVerifiedWAL measures what a cycle over unchanged rows writes now
// that a verification is recorded per batch (issue 20): WAL per verified
// row and payments row updates in each of 12 cycles of 100 k rows in sync
// (PAYRECON_BENCH_CYCLES), on a throwaway cluster of its own with
// full_page_writes on, an instant in-memory gateway, retrieve mode, batch
// 200. Cycle 1 verifies every row for the first time (its columns are
// written: that is a change); a CHECKPOINT precedes cycles 2 and 7, so two
// of the cycles measured pay every page's first full-page image. Three
// settings: --verified-refresh 0 (every verification writes the row, the
// behaviour before), the default 24h, and a refresh period of about 12
// cycles (PAYRECON_BENCH_REFRESH, default 30s), so that the 12 cycles span
// one refresh period and every row's columns are refreshed once in it: the
// average over those cycles is the cost averaged over a refresh period.
//
//	go test -run '^$' -bench VerifiedWAL -benchtime 1x -timeout 30m ./sweep
func BenchmarkVerifiedWAL(b *testing.B) {
	cycles := 12
	if v, err := strconv.Atoi(os.Getenv("PAYRECON_BENCH_CYCLES")); err == nil && v > 2 {
		cycles = v
	}
	short := 30 * time.Second
	if v, err := time.ParseDuration(os.Getenv("PAYRECON_BENCH_REFRESH")); err == nil && v > 0 {
		short = v
	}
	ctx := context.Background()
	cl, err := pglocal.StartCluster(ctx, nil, "full_page_writes=on", "max_wal_size=4GB", "checkpoint_timeout=1h")
	if errors.Is(err, pglocal.ErrNotInstalled) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cl.Stop)
	for _, v := range []struct {
		name    string
		refresh time.Duration
	}{{"refresh=0", -1}, {"refresh=24h", 24 * time.Hour}, {"refresh=" + short.String(), short}} {
		b.Run(v.name, func(b *testing.B) {
			pool, gw := walDatabase(b, cl, 100)
			pgtest.Exec(b, pool, "VACUUM ANALYZE payments")
			s := mustNew(postgres.NewStore(pool), gw, sweep.Config{Job: "wal", Batch: 200, Concurrency: 8,
				Mode: sweep.ModeRetrieve, Grace: sweep.Off, VerifiedRefresh: v.refresh})
			cycle := func() int {
				rep, err := s.RunCycle(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				return rep.Verified
			}
			for b.Loop() {
				cycle()
				pgtest.Exec(b, pool, "VACUUM payments")
				var sumWAL, sumRows, sumUpd int64
				worst := 0.0
				for i := 2; i <= cycles; i++ {
					if i == 2 || i == 7 {
						pgtest.Exec(b, pool, "CHECKPOINT")
					}
					start := time.Now()
					c := measure(b, pool, cycle)
					b.Logf("cycle %d: %d rows verified, %.1f WAL bytes per verified row, %d full-page images, %d payments rows updated, %s",
						i, c.verified, c.walPerRow, c.fpi, c.upd, time.Since(start).Round(time.Millisecond))
					sumWAL, sumRows, sumUpd = sumWAL+c.bytes, sumRows+int64(c.verified), sumUpd+c.upd
					worst = max(worst, c.walPerRow)
					if i == 2 {
						b.ReportMetric(c.walPerRow, "WAL-B/row-after-checkpoint")
					}
				}
				b.ReportMetric(float64(sumWAL)/float64(sumRows), "WAL-B/row-mean")
				b.ReportMetric(worst, "WAL-B/row-worst")
				b.ReportMetric(float64(sumUpd)/float64(cycles-1), "payments-updates/cycle")
			}
		})
	}
}
