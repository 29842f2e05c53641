package sweep_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgtest"
)

// countingTracer counts network round trips: one per query, one per batch
// (a pgx batch is sent and answered in one exchange) and one per COPY; and
// the time spent waiting for them.
type countingTracer struct {
	roundTrips atomic.Int64
	spent      atomic.Int64 // nanoseconds
}

type (
	inBatch  struct{}
	startKey struct{}
)

func (c *countingTracer) start(ctx context.Context) context.Context {
	c.roundTrips.Add(1)
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (c *countingTracer) end(ctx context.Context) {
	if t, ok := ctx.Value(startKey{}).(time.Time); ok {
		c.spent.Add(int64(time.Since(t)))
	}
}

// read returns the round trips and the time spent in them so far.
func (c *countingTracer) read() (int64, time.Duration) {
	return c.roundTrips.Load(), time.Duration(c.spent.Load())
}

func (c *countingTracer) reset() {
	c.roundTrips.Store(0)
	c.spent.Store(0)
}

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) != nil {
		return ctx
	}
	return c.start(ctx)
}
func (c *countingTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(inBatch{}) == nil {
		c.end(ctx)
	}
}
func (c *countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(c.start(ctx), inBatch{}, true)
}
func (c *countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *countingTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	c.end(ctx)
}
func (c *countingTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return c.start(ctx)
}
func (c *countingTracer) TraceCopyFromEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromEndData) {
	c.end(ctx)
}

func tracedPool(t *testing.T, b *testBundle, tr *countingTracer) *pgxpool.Pool {
	t.Helper()
	cfg := b.pool.Config()
	cfg.ConnConfig.Tracer = tr
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// tracedDB is a fresh database's pool whose connections report to tr.
func tracedDB(tb testing.TB, tr *countingTracer) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}
