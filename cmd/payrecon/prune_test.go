package main

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

type pruneReport struct {
	DryRun  bool `json:"dry_run"`
	Deleted int  `json:"deleted"`
	Targets []struct {
		Target    string `json:"target"`
		Retention string `json:"retention"`
		Deleted   int    `json:"deleted"`
		Kept      int    `json:"kept"`
		Batches   int    `json:"batches"`
		Skipped   string `json:"skipped"`
	} `json:"targets"`
}

func (r pruneReport) deleted(target string) int {
	for _, t := range r.Targets {
		if t.Target == target {
			return t.Deleted
		}
	}
	return -1
}

// payrecon prune --once: flags, environment, --dry-run, --json, and a
// second run that finds nothing.
func TestPruneCommand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		VALUES ('evt_old', 'x', now() - interval '50 days', 'ignored'), ('evt_new', 'x', now() - interval '40 days', 'ignored')`)
	pgtest.Exec(t, pool, `INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, processed_at, outcome)
		SELECT 'Payment', '1', 'ApplyPaymentSucceeded', '{}', now() - interval '31 days', 'applied' FROM generate_series(1, 5)`)
	pgtest.Exec(t, pool, `INSERT INTO river_job (args, kind, max_attempts, queue, state, finalized_at, attempt)
		VALUES ('{"outbox_id": 0}', 'payrecon_repair', 8, 'repairs', 'completed', now() - interval '2 days', 1)`)

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prune"}, "prune needs --once"},
		{[]string{"prune", "--once", "--retain-webhook-events", "7d"}, "--retain-webhook-events must be at least 30d (or forever), not 7d: Stripe can still send"},
		{[]string{"prune", "--once", "--retain-outbox", "soon"}, "--retain-outbox"},
		{[]string{"prune", "--once", "--batch", "0"}, "--batch must be between 1 and 10000"},
		{[]string{"run", "--retain-webhook-events", "29d"}, "--retain-webhook-events must be at least 30d"},
	} {
		r := runCLI(t, b.env, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line with %q", c.args, r.code, r.stderr, c.want)
		}
	}

	var dry pruneReport
	mustJSON(t, runCLI(t, b.env, "prune", "--once", "--dry-run", "--json"), &dry)
	if !dry.DryRun || dry.deleted(postgres.PruneOutbox) != 5 || dry.deleted(postgres.PruneWebhookEvents) != 1 ||
		dry.deleted(relay.PruneRiverJobs) != 1 || dry.Deleted != 7 {
		t.Errorf("dry run = %+v", dry)
	}
	if n := pgtest.Count(t, pool, "SELECT (SELECT count(*) FROM outbox) + (SELECT count(*) FROM stripe_webhook_events)"); n != 7 {
		t.Fatalf("the dry run deleted rows: %d left of 7", n)
	}
	r := runCLI(t, b.env, "prune", "--once", "--dry-run")
	for _, want := range []string{"WOULD DELETE", "outbox", "30d", "webhook_events", "45d", "findings", "forever", "kept for ever", "would delete 7 rows in all"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry-run text lacks %q:\n%s", want, r.stdout)
		}
	}

	// The environment keeps webhook events for ever; the flags prune the rest.
	env := map[string]string{"PAYRECON_RETAIN_WEBHOOK_EVENTS": "forever"}
	for k, v := range b.env {
		env[k] = v
	}
	var rep pruneReport
	mustJSON(t, runCLI(t, env, "prune", "--once", "--json", "--batch", "2", "--retain-outbox", "30d"), &rep)
	if rep.deleted(postgres.PruneOutbox) != 5 || rep.deleted(postgres.PruneWebhookEvents) != 0 || rep.deleted(relay.PruneRiverJobs) != 1 {
		t.Errorf("prune = %+v", rep)
	}
	for _, tr := range rep.Targets {
		if tr.Target == postgres.PruneOutbox && tr.Batches < 3 {
			t.Errorf("5 outbox rows in batches of 2 took %d batches", tr.Batches)
		}
		if tr.Target == postgres.PruneWebhookEvents && tr.Skipped != "kept for ever" {
			t.Errorf("webhook events with PAYRECON_RETAIN_WEBHOOK_EVENTS=forever: %+v", tr)
		}
	}
	r = runCLI(t, b.env, "prune", "--once")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted 1 rows in all") {
		t.Errorf("prune text: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, b.env, "prune", "--once")
	if r.code != 0 || !strings.Contains(r.stdout, "deleted 0 rows in all") {
		t.Errorf("a second prune: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The flags' defaults are the library's, and `config` shows them.
func TestRetentionDefaults(t *testing.T) {
	t.Parallel()
	var cfg map[string]string
	mustJSON(t, runCLI(t, map[string]string{}, "config", "--json"), &cfg)
	for key, want := range map[string]time.Duration{
		"retain_outbox":          postgres.RetainOutboxDefault,
		"retain_webhook_events":  postgres.RetainWebhookEventsDefault,
		"retain_console_samples": postgres.RetainConsoleSamplesDefault,
		"retain_findings":        postgres.RetainFindingsDefault,
		"retain_river_jobs":      relay.RiverJobRetentionDefault,
	} {
		if cfg[key] != postgres.FormatRetention(want) {
			t.Errorf("config %s = %q, want %q", key, cfg[key], postgres.FormatRetention(want))
		}
	}
	for in, want := range map[string]time.Duration{"45d": 45 * postgres.Day, "36h": 36 * time.Hour, "forever": 0, "0": 0, "1.5d": 36 * time.Hour} {
		var r retention
		if err := r.UnmarshalText([]byte(in)); err != nil || time.Duration(r) != want {
			t.Errorf("retention %q = %v, %v; want %v", in, time.Duration(r), err, want)
		}
	}
	for _, in := range []string{"", "-1d", "soon", "d", "-3h"} {
		var r retention
		if err := r.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("retention %q accepted", in)
		}
	}
}

// Two `payrecon prune --once` processes at once on the same history: both
// succeed, and between them they delete every row once.
func TestTwoPruneProcessesAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pool := pgtestPool(t, b.url)
	const n = 20000
	pgtest.Exec(t, pool, `INSERT INTO stripe_webhook_events (event_id, event_type, received_at, outcome)
		SELECT 'evt_' || g, 'x', now() - interval '60 days' - (g % 700) * interval '1 second', 'ignored'
		  FROM generate_series(1, $1::int) g`, n)
	var (
		wg      sync.WaitGroup
		reports [2]pruneReport
		codes   [2]int
		outputs [2]string
	)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := startBinary(t, b.env, "prune", "--once", "--json", "--batch", "150")
			code, ok := p.wait(t, 2*time.Minute)
			if !ok {
				codes[i] = -1
				return
			}
			codes[i], outputs[i] = code, p.stderr.String()
			// stdout and stderr share the buffer: the JSON is the object
			// that starts a line with "{".
			if j := strings.Index(outputs[i], "{\n"); j >= 0 {
				_ = json.Unmarshal([]byte(outputs[i][j:]), &reports[i])
			}
		}()
	}
	wg.Wait()
	total := 0
	for i := range 2 {
		if codes[i] != 0 {
			t.Fatalf("pruner %d: exit %d\n%s", i, codes[i], outputs[i])
		}
		total += reports[i].deleted(postgres.PruneWebhookEvents)
	}
	if left := pgtest.Count(t, pool, "SELECT count(*) FROM stripe_webhook_events"); left != 0 || total != n {
		t.Errorf("the two processes deleted %d between them and left %d; want %d and 0\n%s\n%s", total, left, n, outputs[0], outputs[1])
	}
}
