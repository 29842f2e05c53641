package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

func TestPruneConfigValidate(t *testing.T) {
	t.Parallel()
	short, _ := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{postgres.PruneWebhookEvents: 7 * postgres.Day})
	negative, _ := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{postgres.PruneOutbox: -time.Hour})
	unknown := append(postgres.PruneTargets(), postgres.PruneTarget{Name: "x", Table: "x", TimeColumn: "at", Keep: "nothing_by_that_name"})
	for name, c := range map[string]relay.Config{
		"webhook events kept less than Stripe's window": {PruneTargets: short},
		"negative retention":                            {PruneTargets: negative},
		"unknown keep rule":                             {PruneTargets: unknown},
		"batch beyond River's limit":                    {PruneBatch: 20000},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{"nothing": time.Hour}); err == nil {
		t.Error("a retention for no target was accepted")
	}
}

// insertJob writes a finalized River job of kind in state, finalized at.
func insertJob(t *testing.T, b *testBundle, kind, state string, finalized time.Time) int64 {
	t.Helper()
	var id int64
	if err := b.pool.QueryRow(context.Background(), `INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at, attempt)
		VALUES ('{"outbox_id": 0}', $1, 8, 'repairs', $2::river_job_state, $3, 1) RETURNING id`, kind, state, finalized).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func jobExists(t *testing.T, b *testBundle, id int64) bool {
	return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE id = $1", id) == 1
}

// The running relay prunes on River's leader: the periodic job deletes
// history past its retention (counted in payrecon_prune_rows_total), and
// River's cleaner deletes completed jobs after RiverJobRetention, never a
// dead letter.
func TestPeriodicPruneOnTheLeader(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	cfg.RiverJobRetention = time.Hour
	b := setup(t, cfg)
	pgtest.Exec(t, b.pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, processed_at, outcome)
		SELECT 'Payment', '1', 'ApplyPaymentSucceeded', '{}', now() - interval '40 days', 'applied' FROM generate_series(1, 3)`)
	pgtest.Exec(t, b.pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		VALUES ('evt_old', 'x', now() - interval '50 days', 'ignored'), ('evt_new', 'x', now() - interval '1 day', 'ignored')`)
	oldDone := insertJob(t, b, relay.Kind, "completed", time.Now().Add(-2*time.Hour))
	newDone := insertJob(t, b, relay.Kind, "completed", time.Now().Add(-10*time.Minute))
	dead := insertJob(t, b, relay.Kind, "discarded", time.Now().Add(-30*24*time.Hour))

	if err := b.relay.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the periodic prune", 30*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'", relay.PruneKind) == 1
	})
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox"); n != 0 {
		t.Errorf("%d processed outbox rows older than 30 days left", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events WHERE event_id = 'evt_new'"); n != 1 ||
		pgtest.Count(t, b.pool, "SELECT count(*) FROM stripe_webhook_events") != 1 {
		t.Error("webhook events: want the day-old one only")
	}
	for target, want := range map[string]float64{postgres.PruneOutbox: 3, postgres.PruneWebhookEvents: 1, postgres.PruneConsoleSamples: 0} {
		if got := pruned(t, reg, target); got != want {
			t.Errorf("payrecon_prune_rows_total{target=%q} = %v, want %v", target, got, want)
		}
	}
	testkit.WaitFor(t, "River's cleaner to delete the completed job past its retention", 30*time.Second, func() bool {
		return !jobExists(t, b, oldDone)
	})
	if !jobExists(t, b, newDone) || !jobExists(t, b, dead) {
		t.Error("River's cleaner deleted a recent completed job or a dead letter")
	}
}

// pruned reads payrecon_prune_rows_total{target} from reg.
func pruned(t *testing.T, reg *prometheus.Registry, target string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "payrecon_prune_rows_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no payrecon_prune_rows_total{target=%q}", target)
	return 0
}

// prune --once deletes completed River jobs of payrecon's kinds past the
// retention through River, in batches; never a dead letter, a recent job,
// or another application's; a dry run counts them and deletes nothing.
func TestPruneOnceDeletesCompletedRiverJobs(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.InsertOnly = true
	cfg.RiverJobRetention = time.Hour
	cfg.PruneBatch = 1
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	b := setup(t, cfg)
	twoHours := time.Now().Add(-2 * time.Hour)
	gone := []int64{insertJob(t, b, relay.Kind, "completed", twoHours), insertJob(t, b, relay.AdoptKind, "completed", twoHours)}
	kept := []int64{
		insertJob(t, b, "another_application", "completed", twoHours),
		insertJob(t, b, relay.Kind, "discarded", twoHours),
		insertJob(t, b, relay.Kind, "cancelled", twoHours),
		insertJob(t, b, relay.Kind, "completed", time.Now().Add(-10*time.Minute)),
	}
	ctx := context.Background()
	dry, err := b.relay.PruneOnce(ctx, relay.PruneOnceOpts{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs := dry.Targets[len(dry.Targets)-1]
	if jobs.Target != relay.PruneRiverJobs || jobs.Deleted != 2 || !jobExists(t, b, gone[0]) {
		t.Errorf("dry run = %+v", jobs)
	}
	rep, err := b.relay.PruneOnce(ctx, relay.PruneOnceOpts{})
	if err != nil {
		t.Fatal(err)
	}
	jobs = rep.Targets[len(rep.Targets)-1]
	if jobs.Deleted != 2 || jobs.Batches < 2 {
		t.Errorf("river jobs: %+v; want 2 deleted, one per batch", jobs)
	}
	for _, id := range gone {
		if jobExists(t, b, id) {
			t.Errorf("completed job %d past the retention is still there", id)
		}
	}
	for _, id := range kept {
		if !jobExists(t, b, id) {
			t.Errorf("job %d was deleted", id)
		}
	}
	if got := pruned(t, reg, relay.PruneRiverJobs); got != 2 {
		t.Errorf("payrecon_prune_rows_total{target=river_jobs} = %v, want 2", got)
	}
	if again, err := b.relay.PruneOnce(ctx, relay.PruneOnceOpts{}); err != nil || again.Deleted != 0 {
		t.Errorf("second prune = %+v, %v", again, err)
	}
}
