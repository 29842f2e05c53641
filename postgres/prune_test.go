package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
)

// pruneNow is the pruning tests' "now".
var pruneNow = time.Date(2031, 6, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return pruneNow.Add(-d) }

func newPruner(t *testing.T, pool *pgxpool.Pool, cfg postgres.PrunerConfig) *postgres.Pruner {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = testkit.NewClock(pruneNow)
	}
	p, err := postgres.NewPruner(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func target(rep postgres.PruneReport, name string) postgres.TargetReport {
	for _, tr := range rep.Targets {
		if tr.Target == name {
			return tr
		}
	}
	return postgres.TargetReport{}
}

// outboxRow writes one outbox command: processed at processed (nil: not
// processed), for finding (0: none).
func outboxRow(t *testing.T, pool *pgxpool.Pool, label string, processed *time.Time, finding int64) int64 {
	t.Helper()
	payload := map[string]any{"payment_id": 1, "label": label}
	if finding != 0 {
		payload["finding_id"] = finding
	}
	b, _ := json.Marshal(payload)
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at, processed_at, outcome)
		VALUES ('Payment', '1', 'ApplyPaymentSucceeded', $1, $2, $3, CASE WHEN $3::timestamptz IS NOT NULL THEN 'applied' END) RETURNING id`,
		b, ago(400*postgres.Day), processed).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// finding writes a finding of payment, resolved at resolved (nil: open).
func finding(t *testing.T, pool *pgxpool.Pool, payment int64, kind string, resolved *time.Time) int64 {
	t.Helper()
	var id int64
	if err := pool.QueryRow(context.Background(), `INSERT INTO reconciliation_findings
		(payment_id, kind, local_status, verdict, detected_at, resolved_at, resolution)
		VALUES ($1, $2, 'pending', 'repairable', $3, $4, CASE WHEN $4::timestamptz IS NOT NULL THEN 'repaired' END) RETURNING id`,
		payment, kind, ago(3650*postgres.Day), resolved).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// riverJob writes a repair delivery job for outboxID in state.
func riverJob(t *testing.T, pool *pgxpool.Pool, outboxID int64, state string) {
	t.Helper()
	pgtest.Exec(t, pool, `INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at, attempt)
		VALUES (jsonb_build_object('outbox_id', $1::bigint), 'payrecon_repair', 8, 'repairs', $2::river_job_state,
		        CASE WHEN $2 IN ('completed', 'discarded', 'cancelled') THEN now() END, 1)`, outboxID, state)
}

func at(t time.Time) *time.Time { return &t }

func exists(t *testing.T, pool *pgxpool.Pool, table string, id int64) bool {
	t.Helper()
	return pgtest.Count(t, pool, "SELECT count(*) FROM "+table+" WHERE id = $1", id) == 1
}

// Each retention rule: what goes after its retention, and what never goes
// however old (an unprocessed command, one whose River job is kept, a dead
// letter, one whose finding is open; an open finding; a resolved finding
// whose command still waits). A dry run says the same and deletes nothing;
// a second run deletes nothing more.
func TestPruneRetentionRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	pay := pgtest.InsertPayments(t, pool, []pgtest.Payment{{IntentID: "pi_prune_1", Status: "pending"}})[0]
	old, recent := at(ago(40*postgres.Day)), at(ago(10*postgres.Day))

	resolvedOld := finding(t, pool, pay, "missed_success", at(ago(100*postgres.Day)))
	open := finding(t, pool, pay, "missed_cancel", nil)
	resolvedWaiting := finding(t, pool, pay, "paid_locally_not_externally", at(ago(100*postgres.Day)))
	resolvedRecent := finding(t, pool, pay, "missing_externally", at(ago(10*postgres.Day)))

	outbox := map[string]int64{
		"gone: processed, finding resolved, no job": outboxRow(t, pool, "a", old, resolvedOld),
		"gone: processed, no finding, no job":       outboxRow(t, pool, "b", old, 0),
		"kept: processed, finding open":             outboxRow(t, pool, "c", old, open),
		"kept: processed, its job still kept":       outboxRow(t, pool, "d", old, resolvedOld),
		"kept: unprocessed, 400 days old":           outboxRow(t, pool, "e", nil, 0),
		"kept: unprocessed dead letter":             outboxRow(t, pool, "f", nil, 0),
		"kept: processed within the retention":      outboxRow(t, pool, "g", recent, resolvedOld),
		"kept: unprocessed, its finding resolved":   outboxRow(t, pool, "h", nil, resolvedWaiting),
	}
	riverJob(t, pool, outbox["kept: processed, its job still kept"], "completed")
	riverJob(t, pool, outbox["kept: unprocessed dead letter"], "discarded")

	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		VALUES ('evt_50d', 'payment_intent.succeeded', $1, 'applied'), ('evt_44d', 'payment_intent.succeeded', $2, 'applied')`,
		ago(50*postgres.Day), ago(44*postgres.Day))

	// With the defaults, findings are kept for ever; the console's table
	// does not exist yet.
	p := newPruner(t, pool, postgres.PrunerConfig{})
	dry, err := p.Prune(ctx, postgres.PruneOpts{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if o := target(dry, postgres.PruneOutbox); o.Deleted != 2 || o.Kept != 2 || !o.Before.Equal(ago(30*postgres.Day)) {
		t.Errorf("dry run, outbox: %+v; want 2 to go and 2 kept by a rule (the unprocessed ones are never candidates)", o)
	}
	if w := target(dry, postgres.PruneWebhookEvents); w.Deleted != 1 || w.Kept != 0 {
		t.Errorf("dry run, webhook events: %+v", w)
	}
	if f := target(dry, postgres.PruneFindings); f.Skipped != "kept for ever" || f.Deleted != 0 {
		t.Errorf("dry run, findings: %+v", f)
	}
	if c := target(dry, postgres.PruneConsoleSamples); c.Skipped != "" || c.Deleted != 0 {
		t.Errorf("dry run, console samples (none yet): %+v", c)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM outbox"); n != len(outbox) {
		t.Fatalf("the dry run deleted outbox rows: %d left", n)
	}

	rep, err := p.Prune(ctx, postgres.PruneOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 3 {
		t.Errorf("deleted %d rows, want 3: %+v", rep.Deleted, rep)
	}
	for what, id := range outbox {
		if gone := !exists(t, pool, "outbox", id); gone != strings.HasPrefix(what, "gone") {
			t.Errorf("outbox row %q: gone = %v", what, gone)
		}
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events WHERE event_id = 'evt_44d'"); n != 1 ||
		pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events") != 1 {
		t.Error("webhook events: want only the 44-day-old one left")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM reconciliation_findings"); n != 4 {
		t.Errorf("%d findings left, want all 4 (kept for ever by default)", n)
	}

	// Idempotent: nothing more goes.
	if again, err := p.Prune(ctx, postgres.PruneOpts{}); err != nil || again.Deleted != 0 {
		t.Errorf("second prune = %d deleted, %v", again.Deleted, err)
	}

	// The operator asks for findings to go after 90 days; the console has
	// samples older and younger than their retention.
	pgtest.Exec(t, pool, `INSERT INTO console_samples (minute, lag_seconds, open_findings)
		SELECT $1::timestamptz - g * interval '1 hour', g, 0 FROM generate_series(0, 47) g`,
		ago(14*postgres.Day).Add(24*time.Hour-30*time.Minute))
	targets, err := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{postgres.PruneFindings: 90 * postgres.Day})
	if err != nil {
		t.Fatal(err)
	}
	rep, err = newPruner(t, pool, postgres.PrunerConfig{Targets: targets}).Prune(ctx, postgres.PruneOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if f := target(rep, postgres.PruneFindings); f.Deleted != 1 {
		t.Errorf("findings: %+v, want 1 deleted", f)
	}
	for id, want := range map[int64]bool{resolvedOld: false, open: true, resolvedWaiting: true, resolvedRecent: true} {
		if exists(t, pool, "reconciliation_findings", id) != want {
			t.Errorf("finding %d exists = %v, want %v", id, !want, want)
		}
	}
	if c := target(rep, postgres.PruneConsoleSamples); c.Deleted != 24 || pgtest.Count(t, pool, "SELECT count(*) FROM console_samples") != 24 {
		t.Errorf("console samples: %+v; want the 24 older than 14 days gone", c)
	}
}

// Many rows go in many batches, each examining at most the batch size, and
// a row another transaction holds is skipped without waiting.
func TestPruneInBoundedBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	const n, batch = 5000, 400
	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'payment_intent.succeeded', $1::timestamptz - g * interval '1 second', 'applied'
		  FROM generate_series(1, $2::int) g`, ago(60*postgres.Day), n)

	// Another transaction holds one of them.
	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback(ctx) //nolint:errcheck
	if _, err := held.Exec(ctx, "SELECT 1 FROM stripe_webhook_events WHERE event_id = 'evt_2500' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	only := []postgres.PruneTarget{postgres.PruneTargets()[1]}
	var perBatch []int64
	p := newPruner(t, pool, postgres.PrunerConfig{Targets: only, BatchSize: batch,
		DeletedFunc: func(_ string, rows int64) { perBatch = append(perBatch, rows) }})
	rep, err := p.Prune(ctx, postgres.PruneOpts{})
	if err != nil {
		t.Fatal(err)
	}
	tr := rep.Targets[0]
	if tr.Deleted != n-1 || tr.Batches < n/batch {
		t.Errorf("deleted %d in %d batches; want %d in at least %d", tr.Deleted, tr.Batches, n-1, n/batch)
	}
	for i, d := range perBatch {
		if d > batch {
			t.Errorf("batch %d deleted %d rows, more than the batch of %d", i, d, batch)
		}
	}
	if tr.LongestBatch <= 0 {
		t.Error("no batch time measured")
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err = p.Prune(ctx, postgres.PruneOpts{})
	if err != nil || rep.Deleted != 1 || pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events") != 0 {
		t.Errorf("after the lock went: %+v, %v", rep, err)
	}
}

// Rows that share one time (a sweep resolves a batch of findings at one
// instant) all go, in batches smaller than the group, around the kept ones.
func TestPruneRowsOfTheSameInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'x', $1, 'ignored' FROM generate_series(1, 950) g`, ago(60*postgres.Day))
	pgtest.Exec(t, pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, processed_at, outcome)
		SELECT 'Payment', '1', 'ApplyPaymentSucceeded', '{}', $1, 'applied' FROM generate_series(1, 300) g`, ago(60*postgres.Day))
	// Every sixth command's job is still kept.
	pgtest.Exec(t, pool, `INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at, attempt)
		SELECT jsonb_build_object('outbox_id', id), 'payrecon_repair', 8, 'repairs', 'completed', now(), 1
		  FROM outbox WHERE id % 6 = 0`)
	kept := pgtest.Count(t, pool, "SELECT count(*) FROM outbox WHERE id % 6 = 0")
	rep, err := newPruner(t, pool, postgres.PrunerConfig{BatchSize: 70}).Prune(ctx, postgres.PruneOpts{})
	if err != nil {
		t.Fatal(err)
	}
	if w := target(rep, postgres.PruneWebhookEvents); w.Deleted != 950 {
		t.Errorf("webhook events of one instant: %+v, want all 950 deleted", w)
	}
	if o := target(rep, postgres.PruneOutbox); o.Deleted != int64(300-kept) ||
		pgtest.Count(t, pool, "SELECT count(*) FROM outbox") != kept {
		t.Errorf("outbox commands of one instant: %+v, want %d deleted and the %d with a job kept", o, 300-kept, kept)
	}
}

// A run with a deadline stops starting batches at it and says so; the next
// run finishes the work.
func TestPruneStopsAtItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'x', $1, 'ignored' FROM generate_series(1, 300) g`, ago(60*postgres.Day))
	clock := testkit.NewClock(pruneNow)
	// Each batch moves the clock a minute; the deadline is after two.
	p := newPruner(t, pool, postgres.PrunerConfig{Clock: clock, BatchSize: 100,
		DeletedFunc: func(string, int64) { clock.Advance(time.Minute) }})
	rep, err := p.Prune(ctx, postgres.PruneOpts{Deadline: pruneNow.Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if w := target(rep, postgres.PruneWebhookEvents); !w.Unfinished || w.Deleted != 200 {
		t.Errorf("webhook events: %+v; want 200 deleted and unfinished", w)
	}
	clock.Set(pruneNow)
	if rep, err := p.Prune(ctx, postgres.PruneOpts{}); err != nil || target(rep, postgres.PruneWebhookEvents).Deleted != 100 {
		t.Errorf("the next run = %+v, %v", rep, err)
	}
}

// Two pruners at once (two pools, as two processes) delete every row
// exactly once between them, without an error or a deadlock.
func TestTwoPrunersAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	setupPool := poolFor(t, url)
	const n = 20000
	pgtest.Exec(t, setupPool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'x', $1::timestamptz - (g % 500) * interval '1 second', 'ignored' FROM generate_series(1, $2::int) g`,
		ago(60*postgres.Day), n)
	pgtest.Exec(t, setupPool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, processed_at)
		SELECT 'Payment', '1', 'ApplyPaymentSucceeded', '{}', $1::timestamptz - (g % 300) * interval '1 second'
		  FROM generate_series(1, $2::int) g`, ago(60*postgres.Day), n)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total int64
		errs  []error
	)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := newPruner(t, poolFor(t, url), postgres.PrunerConfig{BatchSize: 100 + 37*i})
			rep, err := p.Prune(ctx, postgres.PruneOpts{})
			mu.Lock()
			defer mu.Unlock()
			total += rep.Deleted
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	left := pgtest.Count(t, setupPool, "SELECT (SELECT count(*) FROM stripe_webhook_events) + (SELECT count(*) FROM outbox)")
	if total != 2*n || left != 0 {
		t.Errorf("the pruners deleted %d rows between them and left %d; want %d and 0", total, left, 2*n)
	}
}

// Every target's statements prepare, and on a table of realistic size read
// it through the index on the time column, never with a sequential scan.
// A target whose table exists must have that index (the console's, when it
// arrives, included).
func TestPruneStatementsUseAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	pgtest.Exec(t, pool, `
		INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'x', now() - g * interval '1 minute', 'ignored' FROM generate_series(1, 50000) g;
		INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, processed_at)
		SELECT 'Payment', '1', 'ApplyPaymentSucceeded', jsonb_build_object('finding_id', g), now() - g * interval '1 minute'
		  FROM generate_series(1, 50000) g;
		INSERT INTO payments (order_id, stripe_payment_intent_id, status) VALUES ('o', 'pi_index', 'paid');
		INSERT INTO reconciliation_findings (payment_id, kind, local_status, verdict, detected_at, resolved_at)
		SELECT (SELECT id FROM payments), 'missed_success', 'pending', 'repairable', now() - g * interval '1 minute',
		       now() - g * interval '1 minute' FROM generate_series(1, 50000) g;
		INSERT INTO console_samples (minute, lag_seconds, open_findings)
		SELECT date_trunc('minute', now()) - g * interval '1 minute', 60, 0 FROM generate_series(1, 20160) g;
		ANALYZE stripe_webhook_events; ANALYZE outbox; ANALYZE reconciliation_findings; ANALYZE river_job;
		ANALYZE console_samples`)
	targets, _ := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{postgres.PruneFindings: 90 * postgres.Day})
	for _, tg := range targets {
		batch, count, err := postgres.PruneStatements(tg)
		if err != nil {
			t.Fatal(err)
		}
		if pgtest.Count(t, pool, "SELECT count(*) FROM pg_class WHERE oid = to_regclass($1)", tg.Table) == 0 {
			continue // not there yet: skipped at run time
		}
		if n := pgtest.Count(t, pool, `SELECT count(*) FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
			WHERE i.indrelid = to_regclass($1) AND a.attname = $2`, tg.Table, tg.TimeColumn); n == 0 {
			t.Errorf("%s: no index leads with %s.%s", tg.Name, tg.Table, tg.TimeColumn)
		}
		for name, sql := range map[string]string{"batch": batch, "count": count} {
			rewritten, args, err := pgx.NamedArgs{"from": time.Time{}, "before": time.Now().Add(-30 * 24 * time.Hour), "limit": 1000}.
				RewriteQuery(ctx, nil, sql, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := pool.Query(ctx, "EXPLAIN (FORMAT JSON) "+rewritten, args...)
			if err != nil {
				t.Errorf("%s %s does not plan: %v", tg.Name, name, err)
				continue
			}
			plans, err := pgx.CollectRows(rows, pgx.RowTo[[]planNode])
			if err != nil || len(plans) != 1 || len(plans[0]) != 1 {
				t.Fatalf("%s %s: EXPLAIN = %v, %v", tg.Name, name, plans, err)
			}
			var scans []string
			plans[0][0].Plan.walk(func(n planNode) {
				if n.Relation == tg.Table {
					scans = append(scans, n.Type)
				}
			})
			if len(scans) == 0 || slices.Contains(scans, "Seq Scan") {
				t.Errorf("%s %s reads %s with %v; want index scans only", tg.Name, name, tg.Table, scans)
			}
		}
	}
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	Plan     *planNode  `json:"Plan"`
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Plans    []planNode `json:"Plans"`
}

func (n *planNode) walk(f func(planNode)) {
	if n == nil {
		return
	}
	f(*n)
	for i := range n.Plans {
		n.Plans[i].walk(f)
	}
}
