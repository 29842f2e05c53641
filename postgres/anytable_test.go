package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
)

func poolFor(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// catalogue lists every relation and column outside the system schemas:
// what a refused migrate must leave as it found it.
func catalogue(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `
		SELECT coalesce(string_agg(c.oid::regclass::text || '.' || coalesce(a.attname, '') || ':' ||
		       coalesce(format_type(a.atttypid, a.atttypmod), ''), ',' ORDER BY 1), '')
		  FROM pg_class c
		  JOIN pg_namespace n ON n.oid = c.relnamespace
		  LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The seed's columns, for the refusal cases to take apart.
const goodColumns = `id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, order_id text NOT NULL,
	stripe_payment_intent_id text NOT NULL, status text NOT NULL, version bigint NOT NULL DEFAULT 0,
	created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now()`

// migrate refuses, in one line naming what is wrong, every payments it
// cannot work with, and changes nothing; it accepts the variants it can.
func TestMigrateChecksThePaymentsShape(t *testing.T) {
	t.Parallel()
	// A view over a good table; defects are introduced by the case.
	const base = `CREATE TABLE app_payments (` + goodColumns + `,
		observed_external_status text, last_reconciled_at timestamptz);`
	viewOf := func(cols string) string {
		return base + ` CREATE VIEW payments AS SELECT ` + cols + ` FROM app_payments;`
	}
	const viewCols = `id, order_id, stripe_payment_intent_id, status, version, created_at, updated_at, observed_external_status, last_reconciled_at`
	table := func(replace, with string) string {
		return `CREATE TABLE payments (` + strings.Replace(goodColumns, replace, with, 1) + `);`
	}
	cases := []struct {
		name string
		sql  string
		want []string // all in the one line; none: migrate succeeds
	}{
		{"seed table", table("", ""), nil},
		{"integer id, varchar status, a domain over text",
			`CREATE DOMAIN intent_id AS varchar(255); CREATE TABLE payments (id integer PRIMARY KEY, order_id bigint,
			  stripe_payment_intent_id intent_id, status varchar(20), version integer, created_at timestamptz, updated_at timestamptz);`, nil},
		{"a view that can be updated", viewOf(viewCols), nil},
		{"id is text", table("id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "id text PRIMARY KEY"), []string{"id is text, not bigint or integer"}},
		{"id is numeric", table("id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "id numeric PRIMARY KEY"), []string{"id is numeric"}},
		{"no id", table("id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "charge_id bigint PRIMARY KEY"), []string{"no column id"}},
		{"no order_id", table("order_id text NOT NULL", "reference text"), []string{"no column order_id"}},
		{"no intent id", table("stripe_payment_intent_id text NOT NULL", "pi text"), []string{"no column stripe_payment_intent_id"}},
		{"intent id is bigint", table("stripe_payment_intent_id text NOT NULL", "stripe_payment_intent_id bigint"), []string{"stripe_payment_intent_id is bigint"}},
		{"no status", table("status text NOT NULL", "state text"), []string{"no column status"}},
		{"status is an enum", `CREATE TYPE payment_state AS ENUM ('pending', 'paid', 'failed'); ` +
			table("status text NOT NULL", "status payment_state NOT NULL"), []string{"status is payment_state, not text or varchar"}},
		{"status is char", table("status text NOT NULL", "status char(10)"), []string{"status is character(10)"}},
		{"no version", table("version bigint NOT NULL DEFAULT 0,", ""), []string{"no column version"}},
		{"version is text", table("version bigint NOT NULL DEFAULT 0", "version text"), []string{"version is text, not integer or bigint"}},
		{"version is numeric", table("version bigint NOT NULL DEFAULT 0", "version numeric"), []string{"version is numeric"}},
		{"no created_at", table("created_at timestamptz NOT NULL DEFAULT now(),", ""), []string{"no column created_at"}},
		{"created_at without time zone", table("created_at timestamptz", "created_at timestamp"), []string{"created_at is timestamp without time zone, not timestamptz"}},
		{"updated_at is a date", table("updated_at timestamptz", "updated_at date"), []string{"updated_at is date"}},
		{"no updated_at", table(", updated_at timestamptz NOT NULL DEFAULT now()", ""), []string{"no column updated_at"}},
		{"reconciler column of the wrong type", table("", "observed_external_status integer, "), []string{"observed_external_status is integer"}},
		{"reconciler time of the wrong type", table("", "last_reconciled_at timestamp, "), []string{"last_reconciled_at is timestamp without time zone"}},
		{"several at once", `CREATE TABLE payments (id text, order_id text, stripe_payment_intent_id text, status text,
			version text, updated_at timestamptz);`, []string{"id is text", "; version is text", "; no column created_at"}},
		{"view without the reconciler's columns",
			viewOf(`id, order_id, stripe_payment_intent_id, status, version, created_at, updated_at`),
			[]string{"no column observed_external_status", "no column last_reconciled_at", "payrecon cannot add a column to a view"}},
		{"view mapping status with no way back",
			viewOf(strings.Replace(viewCols, "status,", "upper(status) AS status,", 1)),
			[]string{"status cannot be updated through the view (add an INSTEAD OF UPDATE trigger)"}},
		{"view that cannot be locked", base + ` CREATE VIEW payments AS SELECT DISTINCT ` + viewCols + ` FROM app_payments;`,
			[]string{"rows cannot be locked", "DISTINCT"}},
		{"partitioned table", `CREATE TABLE payments (` + goodColumns[strings.Index(goodColumns, "order_id"):] + `, id bigint NOT NULL)
			PARTITION BY RANGE (created_at);`, []string{"it is a partitioned table: put a view in front of it"}},
		{"materialized view", base + ` CREATE MATERIALIZED VIEW payments AS SELECT ` + viewCols + ` FROM app_payments;`,
			[]string{"it is a materialized view; payrecon needs a table or an updatable view"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.NewEmptyURL(t)
			pool := poolFor(t, url)
			pgtest.Exec(t, pool, c.sql)
			before := catalogue(t, pool)
			_, err := postgres.Migrate(context.Background(), pool, nil)
			if c.want == nil {
				if err != nil {
					t.Fatalf("migrate refused a payments it can work with: %v", err)
				}
				if n := pgtest.Count(t, pool, "SELECT count(*) FROM payrecon_schema_migrations"); n == 0 {
					t.Error("nothing applied")
				}
				return
			}
			var shape *postgres.PaymentsShapeError
			if !errors.As(err, &shape) || !errors.Is(err, payrecon.ErrConfig) {
				t.Fatalf("migrate = %v, want a PaymentsShapeError matching ErrConfig", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("the refusal is not one line: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q lacks %q", msg, w)
				}
			}
			if after := catalogue(t, pool); after != before {
				t.Errorf("a refused migrate changed the database:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// A search_path that names no existing schema is refused before anything
// is created (there would be nowhere to create it).
func TestMigrateRefusesASearchPathWithNoSchema(t *testing.T) {
	t.Parallel()
	url := pgtest.WithSearchPath(t, pgtest.NewEmptyURL(t), "payrecon_missing")
	pool := poolFor(t, url)
	_, err := postgres.Migrate(context.Background(), pool, nil)
	if !errors.Is(err, payrecon.ErrConfig) || !strings.Contains(err.Error(), "no schema of search_path exists") {
		t.Fatalf("migrate = %v", err)
	}
}

// The recipe of docs/payments-table.md migrates: payrecon's tables in its
// own schema, no index or foreign key on the view, and the canonical
// writer's transition lands in the application's table in its vocabulary.
func TestMigrateThroughThePaymentsView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewPaymentsViewURL(t)
	pool := poolFor(t, url)
	applied, err := postgres.Migrate(ctx, pool, nil)
	if err != nil {
		t.Fatalf("migrate through the view: %v", err)
	}
	var saw5, saw13 bool
	for _, m := range applied {
		saw5 = saw5 || (m.Version == 5 && strings.Contains(m.Source, "only when payments is a table"))
		saw13 = saw13 || m.Version == 13
	}
	if !saw5 || !saw13 {
		t.Errorf("applied %v; want 00005 (named) and 00013", applied)
	}
	if again, err := postgres.Migrate(ctx, pool, nil); err != nil || len(again) != 0 {
		t.Errorf("second migrate = %v, %v", again, err)
	}
	if err := postgres.CheckMigrations(ctx, pool); err != nil {
		t.Errorf("CheckMigrations: %v", err)
	}
	checks := []struct {
		what string
		sql  string
		want int
	}{
		{"payrecon's tables in its schema", `SELECT count(*) FROM pg_tables WHERE schemaname = 'payrecon'
			AND tablename IN ('outbox', 'reconciliation_findings', 'reconciliation_cursor', 'reconciliation_recheck',
			'stripe_webhook_events', 'river_job', 'payrecon_schema_migrations')`, 7},
		{"anything of payrecon's in public", `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'public'`, 0},
		{"payments is still the view", `SELECT count(*) FROM pg_class WHERE oid = 'payrecon.payments'::regclass AND relkind = 'v'`, 1},
		{"indexes payrecon built on the application's table", `SELECT count(*) FROM pg_indexes WHERE schemaname = 'shop'
			AND indexname IN ('payments_reconciled_order', 'payments_created_at')`, 0},
		{"foreign keys to the view or the table", `SELECT count(*) FROM pg_constraint WHERE contype = 'f'
			AND confrelid IN ('payrecon.payments'::regclass, 'shop.charges'::regclass)`, 0},
	}
	for _, c := range checks {
		if got := pgtest.Count(t, pool, c.sql); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}

	// Two days old: the estimate cannot borrow the count of the last day's rows.
	pgtest.Exec(t, pool, `INSERT INTO shop.charges (reference, stripe_pi, state, amount_cents, inserted_at, modified_at)
		SELECT 'order-' || g, 'pi_view_' || g, 'PENDING', 100 * g, now() - interval '2 days', now() - interval '2 days'
		  FROM generate_series(1, 40) g`)
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	w := postgres.NewWriter(testkit.NewClock(now))
	var res postgres.ApplyResult
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		res, err = w.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{IntentID: "pi_view_7"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if res.Outcome != payrecon.Applied || res.After != payrecon.StatusPaid || res.Version != 1 {
		t.Errorf("transition through the view = %+v", res)
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM shop.charges WHERE stripe_pi = 'pi_view_7'
		AND state = 'SETTLED' AND lock_version = 1 AND modified_at = $1`, now); n != 1 {
		t.Error("the application's row is not SETTLED, version 1, modified at the transition")
	}
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		res, err = w.Apply(ctx, tx, payrecon.ApplyPaymentFailed, postgres.PaymentRef{IntentID: "pi_view_7"})
		return err
	}); err != nil || res.Outcome != payrecon.MovedElsewhere {
		t.Errorf("a late failure on the paid row = %+v, %v; want moved_elsewhere", res, err)
	}

	// The row estimate reads the statistics of the table under the view.
	pgtest.Exec(t, pool, "ANALYZE shop.charges")
	st, err := postgres.NewMonitor(pool).Status(ctx, time.Now(), false, "payrecon_repair")
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 40 {
		t.Errorf("estimated rows through the view = %d, want 40", st.Rows)
	}

	// The recipe's optional foreign keys apply after migrating.
	pgtest.RunRecipeAfterMigrate(t, url)
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND confrelid = 'shop.charges'::regclass`); n != 2 {
		t.Errorf("%d foreign keys to the application's table after the recipe's last step, want 2", n)
	}
}

// The recipe's trigger is a compare-and-set: an application change that
// commits while payrecon's update of the same row waits is never
// overwritten, and payrecon sees no row updated.
func TestPaymentsViewTriggerNeverOverwritesAConcurrentChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewPaymentsViewURL(t)
	pool := poolFor(t, url)
	if _, err := postgres.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, `INSERT INTO shop.charges (reference, stripe_pi, state, amount_cents) VALUES ('o-1', 'pi_cas', 'PENDING', 500)`)

	// The application's transaction: the row is DECLINED, version 1, not yet
	// committed.
	app, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Rollback(ctx) //nolint:errcheck
	if _, err := app.Exec(ctx, `UPDATE shop.charges SET state = 'DECLINED', lock_version = lock_version + 1 WHERE stripe_pi = 'pi_cas'`); err != nil {
		t.Fatal(err)
	}
	var appPID int
	if err := app.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&appPID); err != nil {
		t.Fatal(err)
	}
	// payrecon's sweep marks the row it read (pending, version 0) verified:
	// the statement sees the old row and waits for the application's lock.
	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		rows, err := pool.Query(ctx, `UPDATE payments p SET observed_external_status = 'requires_payment_method', last_reconciled_at = now()
			WHERE p.stripe_payment_intent_id = 'pi_cas' AND p.version = 0 AND p.status = 'pending' RETURNING p.id`)
		if err != nil {
			done <- result{err: err}
			return
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		done <- result{ids, err}
	}()
	testkit.WaitFor(t, "payrecon's update to wait for the application's lock", 10*time.Second, func() bool {
		return pgtest.Count(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND $1 = ANY (pg_blocking_pids(pid))`, appPID) == 1
	})
	if err := app.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.ids) != 0 {
		t.Errorf("payrecon's update counted rows %v: it verified a row that changed under it", r.ids)
	}
	if n := pgtest.Count(t, pool, `SELECT count(*) FROM shop.charges WHERE stripe_pi = 'pi_cas' AND state = 'DECLINED'
		AND lock_version = 1 AND payrecon_reconciled_at IS NULL`); n != 1 {
		t.Error("the application's change was overwritten")
	}
}

// A recheck queued for a payment that has gone (a view has no foreign key
// to remove it) is not due: the sweep is never woken for it.
func TestRecheckOfAVanishedPaymentIsNotDue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := poolFor(t, pgtest.NewPaymentsViewURL(t))
	if _, err := postgres.Migrate(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, pool, `INSERT INTO shop.charges (reference, stripe_pi, state, amount_cents)
		VALUES ('o-1', 'pi_gone', 'PENDING', 1), ('o-2', 'pi_kept', 'PENDING', 1)`)
	pgtest.Exec(t, pool, `INSERT INTO reconciliation_recheck (job, payment_id, reason, due_at)
		SELECT 'default', id, 'unverifiable', now() - interval '1 hour' FROM payments WHERE stripe_payment_intent_id = 'pi_gone'
		UNION ALL
		SELECT 'default', id, 'unverifiable', now() + interval '1 hour' FROM payments WHERE stripe_payment_intent_id = 'pi_kept'`)
	store := postgres.NewStore(pool)
	due, err := store.NextRecheck(ctx, "default", "")
	if err != nil || !due.Before(time.Now()) {
		t.Fatalf("next recheck = %v, %v; want the overdue one", due, err)
	}
	pgtest.Exec(t, pool, `DELETE FROM shop.charges WHERE stripe_pi = 'pi_gone'`)
	due, err = store.NextRecheck(ctx, "default", "")
	if err != nil || !due.After(time.Now()) {
		t.Errorf("next recheck after the payment went = %v, %v; want the one an hour ahead", due, err)
	}
}

// On a table, migrate gives what it always gave: the two indexes and the
// foreign keys, named as before; an installation that got its foreign keys
// from 00001 and 00002 before 00013 existed gets no second one.
func TestTableInstallationKeepsItsKeysAndIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	want := map[string]string{
		"payment_transitions_payment_id_fkey":     "FOREIGN KEY (payment_id) REFERENCES payments(id)",
		"reconciliation_findings_payment_id_fkey": "FOREIGN KEY (payment_id) REFERENCES payments(id)",
		"reconciliation_recheck_payment_id_fkey":  "FOREIGN KEY (payment_id) REFERENCES payments(id) ON DELETE CASCADE",
	}
	check := func(when string) {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint
			WHERE contype = 'f' AND confrelid = 'payments'::regclass`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		var name, def string
		if _, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error { got[name] = def; return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: foreign keys to payments %v, want %v", when, got, want)
		}
		for n, d := range want {
			if got[n] != d {
				t.Errorf("%s: %s = %q, want %q", when, n, got[n], d)
			}
		}
		// payments_created_at; payments_reconciled_order (00005) is dropped
		// by 00015 (verifications are HOT updates).
		if n := pgtest.Count(t, pool, `SELECT count(*) FROM pg_indexes WHERE tablename = 'payments'
			AND indexname IN ('payments_reconciled_order', 'payments_created_at')`); n != 1 {
			t.Errorf("%s: %d of payrecon's indexes on payments, want payments_created_at only", when, n)
		}
	}
	check("fresh table")
	// An installation older than 00013: its keys came from 00001 and 00002
	// (00013's down does nothing: the later migrations are undone, and the
	// keys stay).
	if err := postgres.MigrateDownTo(ctx, pool, 12); err != nil {
		t.Fatal(err)
	}
	applied, err := postgres.Migrate(ctx, pool, nil)
	if err != nil || len(applied) == 0 || applied[0].Version != 13 {
		t.Fatalf("migrate of an installation at 00012 = %v, %v", applied, err)
	}
	check("after 00013 on an older installation")
}
