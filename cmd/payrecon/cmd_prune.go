package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// retention is a --retain-* value: "45d", a Go duration ("36h"), or
// "forever" (also "0").
type retention time.Duration

// UnmarshalText implements encoding.TextUnmarshaler (kong reads flags and
// environment variables through it).
func (r *retention) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	switch {
	case s == "forever" || s == "0":
		*r = 0
		return nil
	case strings.HasSuffix(s, "d"):
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a retention: write days (45d), a duration (36h) or forever", s)
		}
		*r = retention(n * float64(postgres.Day))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q is not a retention: write days (45d), a duration (36h) or forever", s)
	}
	*r = retention(d)
	return nil
}

// retainFlags are the retentions of history: what the periodic prune of
// `run` and `relay` deletes, and `prune --once`. Give every process the
// same values (the environment variables make that easy).
type retainFlags struct {
	RetainOutbox         retention `name:"retain-outbox" env:"PAYRECON_RETAIN_OUTBOX" default:"30d" help:"Delete processed repair commands this long after they were applied; never an unprocessed one, one whose River job is still kept, or one whose finding is open (forever: keep them)."`
	RetainWebhookEvents  retention `name:"retain-webhook-events" env:"PAYRECON_RETAIN_WEBHOOK_EVENTS" default:"45d" help:"Delete processed Stripe event ids this long after they arrived; at least 30d, Stripe's event window: an event Stripe can still send must still be recognised (forever: keep them)."`
	RetainRiverJobs      retention `name:"retain-river-jobs" env:"PAYRECON_RETAIN_RIVER_JOBS" default:"1d" help:"Delete completed River jobs this long after they completed (River's cleaner); dead letters stay until retried (forever: keep them)."`
	RetainConsoleSamples retention `name:"retain-console-samples" env:"PAYRECON_RETAIN_CONSOLE_SAMPLES" default:"14d" help:"Delete the console's samples this long after they were taken (forever: keep them)."`
	RetainFindings       retention `name:"retain-findings" env:"PAYRECON_RETAIN_FINDINGS" default:"forever" help:"Delete resolved findings this long after they were resolved; open ones never (findings are the audit trail: kept for ever unless you say)."`
}

// relayConfig sets the retentions on a relay configuration.
func (f retainFlags) relayConfig(c relay.Config) (relay.Config, error) {
	targets, err := postgres.WithRetentions(postgres.PruneTargets(), map[string]time.Duration{
		postgres.PruneOutbox:         time.Duration(f.RetainOutbox),
		postgres.PruneWebhookEvents:  time.Duration(f.RetainWebhookEvents),
		postgres.PruneConsoleSamples: time.Duration(f.RetainConsoleSamples),
		postgres.PruneFindings:       time.Duration(f.RetainFindings),
	})
	if err != nil {
		return c, err
	}
	if err := postgres.ValidatePruneTargets(targets); err != nil {
		var re *postgres.RetentionError
		if errors.As(err, &re) {
			return c, usageError{fmt.Errorf("--retain-%s must be at least %s (or forever), not %s: %s",
				strings.ReplaceAll(re.Target, "_", "-"), postgres.FormatRetention(re.Min), postgres.FormatRetention(re.Retention), re.Reason)}
		}
		return c, usageError{err}
	}
	c.PruneTargets = targets
	c.RiverJobRetention = time.Duration(f.RetainRiverJobs)
	if c.RiverJobRetention == 0 {
		c.RiverJobRetention = relay.Forever // --retain-river-jobs forever
	}
	return c, nil
}

type pruneCmd struct {
	retainFlags
	Once   bool `help:"Prune once, until nothing past its retention is left, and exit (for cron; the service prunes every --prune-interval by itself)."`
	DryRun bool `name:"dry-run" help:"Say what would be deleted, and what a rule keeps, deleting nothing."`
	Batch  int  `default:"1000" help:"Rows one batch examines at most (each batch is one short statement)."`
	JSON   bool `help:"Print JSON."`
}

func (c *pruneCmd) Run(a *app) error {
	if !c.Once {
		return usageError{fmt.Errorf("prune needs --once (from cron); `payrecon run` prunes every --prune-interval by itself")}
	}
	if c.Batch < 1 || c.Batch > 10000 {
		return usageError{fmt.Errorf("--batch must be between 1 and 10000, got %d", c.Batch)}
	}
	cfg, err := c.retainFlags.relayConfig(relay.Config{InsertOnly: true, PruneBatch: c.Batch, Logger: a.logger.With("component", "prune")})
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	rl, err := relay.New(pool, postgres.NewWriter(nil), cfg)
	if err != nil {
		return usageError{err}
	}
	rep, err := rl.PruneOnce(a.ctx, relay.PruneOnceOpts{DryRun: c.DryRun})
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(rep)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	verb := "deleted"
	if c.DryRun {
		verb = "would delete"
		fmt.Fprintln(tw, "TARGET\tRETENTION\tOLDER THAN\tWOULD DELETE\tKEPT BY A RULE\t")
	} else {
		fmt.Fprintln(tw, "TARGET\tRETENTION\tOLDER THAN\tDELETED\tBATCHES\t")
	}
	for _, t := range rep.Targets {
		if t.Skipped != "" {
			fmt.Fprintf(tw, "%s\t%s\t\t—\t\t%s\n", t.Target, t.Retention, t.Skipped)
			continue
		}
		second := t.Batches
		if c.DryRun {
			second = int(t.Kept)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t\n", t.Target, t.Retention, t.Before.UTC().Format(time.RFC3339), t.Deleted, second)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "%s %d rows in all\n", verb, rep.Deleted)
	return nil
}
