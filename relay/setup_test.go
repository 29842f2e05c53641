package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/goleak"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// quickRetries retries a failed attempt after 10 ms instead of River's
// attempt⁴ seconds, so tests reach the last attempt quickly.
type quickRetries struct{}

func (quickRetries) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(10 * time.Millisecond)
}

// testConfig is the relay configuration of the tests: quick retries, a
// short stuck-job rescue, and logs at warning level into the test's output.
func testConfig(t testing.TB) relay.Config {
	return relay.Config{
		Workers:              10,
		MaxAttempts:          3,
		Logger:               slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
		RetryPolicy:          quickRetries{},
		FetchPollInterval:    100 * time.Millisecond,
		JobTimeout:           5 * time.Second,
		RescueStuckJobsAfter: 10 * time.Second,
		DrainPollInterval:    10 * time.Millisecond,
	}
}

type testBundle struct {
	url    string
	pool   *pgxpool.Pool
	writer *postgres.Writer
	relay  *relay.Relay
}

// setup builds a relay on a fresh database, with a pool large enough for
// its workers; the relay is stopped when the test ends.
func setup(t testing.TB, cfg relay.Config) *testBundle {
	t.Helper()
	b := &testBundle{url: pgtest.NewURL(t), writer: postgres.NewWriter(nil)}
	b.pool = newPool(t, b.url, cfg.Workers+5)
	r, err := relay.New(b.pool, b.writer, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.relay = r
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.Stop(ctx); err != nil {
			t.Errorf("stop relay: %v", err)
		}
	})
	return b
}

func newPool(t testing.TB, url string, maxConns int) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = int32(maxConns)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// repairs are the rows of n seeded repair commands, index-aligned.
type repairs struct {
	payments, findings, outbox []int64
	intents                    []string
}

// seedRepairs creates n pending payments, each with an open missed_success
// finding and its ApplyPaymentSucceeded command, and, when enqueue is set,
// the delivery jobs, all in one transaction as the sweep writes them.
func (b *testBundle) seedRepairs(t testing.TB, n int, enqueue bool) repairs {
	t.Helper()
	var before int64
	if err := b.pool.QueryRow(context.Background(), "SELECT coalesce(max(id), 0) FROM payments").Scan(&before); err != nil {
		t.Fatal(err)
	}
	ps := make([]pgtest.Payment, n)
	for i := range ps {
		ps[i] = pgtest.Payment{IntentID: fmt.Sprintf("pi_%d_%d", before, i), Status: payrecon.StatusPending}
	}
	rs, err := b.commitRepairs(context.Background(), pgtest.InsertPayments(t, b.pool, ps), enqueue)
	if err != nil {
		t.Fatalf("seed %d repairs: %v", n, err)
	}
	return rs
}

// commitRepairs commits, in one transaction, an open missed_success finding
// and its ApplyPaymentSucceeded command for each payment, and, when enqueue
// is set, their delivery jobs.
func (b *testBundle) commitRepairs(ctx context.Context, paymentIDs []int64, enqueue bool) (repairs, error) {
	var rs repairs
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH f AS (
			    INSERT INTO reconciliation_findings (payment_id, stripe_payment_intent_id, kind, local_status,
			           external_status, verdict, repair_command, reason, job)
			    SELECT id, stripe_payment_intent_id, 'missed_success', 'pending', 'succeeded', 'repairable',
			           'ApplyPaymentSucceeded', 'test', 'test'
			      FROM payments WHERE id = ANY($1)
			    RETURNING id, payment_id
			), o AS (
			    INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			    SELECT 'Payment', payment_id::text, 'ApplyPaymentSucceeded',
			           jsonb_build_object('payment_id', payment_id, 'finding_id', id)
			      FROM f ORDER BY payment_id
			    RETURNING id, (payload->>'payment_id')::bigint AS payment_id, (payload->>'finding_id')::bigint AS finding_id
			)
			SELECT o.payment_id, o.finding_id, o.id, p.stripe_payment_intent_id
			  FROM o JOIN payments p ON p.id = o.payment_id
			 ORDER BY o.payment_id`, paymentIDs)
		if err != nil {
			return err
		}
		var (
			p, f, o int64
			intent  string
		)
		if _, err := pgx.ForEachRow(rows, []any{&p, &f, &o, &intent}, func() error {
			rs.payments, rs.findings, rs.outbox = append(rs.payments, p), append(rs.findings, f), append(rs.outbox, o)
			rs.intents = append(rs.intents, intent)
			return nil
		}); err != nil {
			return err
		}
		if !enqueue {
			return nil
		}
		return b.relay.Enqueue(ctx, tx, rs.outbox)
	})
	return rs, err
}

// insertCommand writes one outbox command with the given event type and
// payload, and enqueues it.
func (b *testBundle) insertCommand(t testing.TB, eventType, payload string) int64 {
	t.Helper()
	ctx := context.Background()
	var id int64
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('Payment', '0', $1, $2::jsonb) RETURNING id`, eventType, payload).Scan(&id); err != nil {
			return err
		}
		return b.relay.Enqueue(ctx, tx, []int64{id})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// installAudit records every outbox command's move to processed in
// test_applied, so a test can prove each was applied once however often
// it was delivered.
func installAudit(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	pgtest.Exec(t, pool, `
		CREATE TABLE test_applied (outbox_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
		CREATE FUNCTION test_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    IF OLD.processed_at IS NULL AND NEW.processed_at IS NOT NULL THEN
		        INSERT INTO test_applied (outbox_id) VALUES (NEW.id);
		    END IF;
		    RETURN NEW;
		END $$;
		CREATE TRIGGER test_audit AFTER UPDATE ON outbox FOR EACH ROW EXECUTE FUNCTION test_audit();`)
}

// checkAppliedOnce asserts that every seeded command was applied exactly
// once: each payment paid with version 1, each finding resolved, each
// outbox row processed once (per the audit), each job completed.
func checkAppliedOnce(t testing.TB, pool *pgxpool.Pool, n int) {
	t.Helper()
	checks := []struct {
		what string
		sql  string
		want int
	}{
		{"payments paid with version 1", "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1", n},
		{"payments in any other state", "SELECT count(*) FROM payments WHERE NOT (status = 'paid' AND version = 1)", 0},
		{"findings resolved", "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NOT NULL", n},
		{"outbox rows processed", "SELECT count(*) FROM outbox WHERE processed_at IS NOT NULL AND last_error IS NULL", n},
		{"outbox rows applied once (audit)", "SELECT count(DISTINCT outbox_id) FROM test_applied", n},
		{"outbox rows applied more than once (audit)", "SELECT count(*) FROM (SELECT outbox_id FROM test_applied GROUP BY outbox_id HAVING count(*) > 1) x", 0},
		{"jobs completed", "SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair' AND state = 'completed'", n},
	}
	for _, c := range checks {
		if got := pgtest.Count(t, pool, c.sql); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
}

// env returns os.Getenv(key), or def when it is unset.
func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// freezePayments makes every UPDATE of payments fail, as a deterministic
// transient failure, until the returned function is called.
func freezePayments(t testing.TB, b *testBundle) (unfreeze func()) {
	t.Helper()
	pgtest.Exec(t, b.pool, `
		CREATE TABLE test_freeze (frozen bool NOT NULL);
		INSERT INTO test_freeze VALUES (true);
		CREATE FUNCTION test_freeze() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    IF (SELECT frozen FROM test_freeze) THEN
		        RAISE EXCEPTION 'payments are frozen for the test';
		    END IF;
		    RETURN NEW;
		END $$;
		CREATE TRIGGER test_freeze BEFORE UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION test_freeze();`)
	return func() { pgtest.Exec(t, b.pool, "UPDATE test_freeze SET frozen = false") }
}
