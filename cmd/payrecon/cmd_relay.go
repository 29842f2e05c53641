package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

type relayCmd struct {
	Drain       bool  `help:"Apply every repair command that is due, then exit (commands waiting for a later retry are left and counted)."`
	DeadLetters bool  `name:"dead-letters" help:"List repair commands and notifications River gave up on (discarded after their last attempt, or cancelled as invalid)."`
	Retry       int64 `placeholder:"JOB_ID" help:"Retry a dead-lettered repair or notification job now (after fixing its cause)."`
	Workers     int   `default:"16" help:"Commands applied at once (at most --db-max-conns minus 4)."`
	maxAttemptsFlag
	JSON bool `help:"Print JSON."`
	retainFlags
	notifyFlags
}

func (c *relayCmd) Run(a *app) error {
	if err := checkPositiveInt("--workers", c.Workers); err != nil {
		return err
	}
	if err := checkPositiveInt("--max-attempts", c.MaxAttempts); err != nil {
		return err
	}
	if a.cli.DBMaxConns < relayConnMin {
		return usageError{fmt.Errorf("--db-max-conns %d is too few for relay: it needs at least %d", a.cli.DBMaxConns, relayConnMin)}
	}
	if w, lowered := workersWithin(c.Workers, a.cli.DBMaxConns, relayConnReserve); lowered {
		a.logger.Warn("fewer repair workers than --workers: the connection budget holds no more", "workers", c.Workers, "db_max_conns", a.cli.DBMaxConns, "effective_workers", w)
		c.Workers = w
	}
	// While it runs, this relay may be River's leader: it prunes (and River
	// cleans) with the same retentions as `run`. A drain, short-lived,
	// schedules no prune.
	cfg, err := c.retainFlags.relayConfig(relay.Config{
		Workers: c.Workers, MaxAttempts: c.MaxAttempts, Logger: a.logger.With("component", "relay"),
		InsertOnly: !c.Drain && (c.DeadLetters || c.Retry != 0),
	})
	if err != nil {
		return err
	}
	if c.Drain {
		cfg.PruneInterval = -1
	}
	if cfg.Notify, err = c.notifyFlags.config(); err != nil {
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
	switch {
	case c.DeadLetters:
		dl, err := rl.DeadLetters(a.ctx, 1000)
		if err != nil {
			return err
		}
		if c.JSON {
			if dl == nil {
				dl = []relay.DeadLetter{}
			}
			return a.printJSON(dl)
		}
		if len(dl) == 0 {
			fmt.Fprintln(a.stdout, "no dead letters")
			return nil
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tOUTBOX\tCOMMAND\tSTATE\tATTEMPTS\tWHEN\tLAST ERROR")
		for _, d := range dl {
			ref, what := fmt.Sprint(d.OutboxID), d.EventType
			if d.Kind == relay.NotifyKind {
				ref, what = "-", fmt.Sprintf("notify transition %d", d.TransitionID)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", d.JobID, ref, what, d.State, d.Attempts, ago(time.Now(), d.At), d.LastError)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, "retry one with: payrecon relay --retry JOB")
		return nil
	case c.Retry != 0:
		acts, err := action.New(pool, action.Config{Relay: rl})
		if err != nil {
			return err
		}
		job, err := acts.RetryDeadLetter(a.ctx, c.Retry, action.By{})
		if err != nil {
			return err
		}
		if c.JSON {
			return a.printJSON(job)
		}
		fmt.Fprintf(a.stdout, "job %d is %s again (attempt %d of %d); a running relay, `payrecon run` or `payrecon relay --drain` applies it\n",
			job.ID, job.State, job.Attempt, job.MaxAttempts)
		return nil
	case c.Drain:
		dropped, err := rl.DropHealed(a.ctx)
		if err != nil {
			return err
		}
		if len(dropped) > 0 {
			a.logger.Info("dropped held repairs whose finding closed before an approval", "count", len(dropped))
		}
		adopted, err := rl.EnqueueUnprocessed(a.ctx)
		if err != nil {
			return err
		}
		if adopted > 0 {
			a.logger.Info("queued outbox commands that had no delivery job", "count", adopted)
		}
		rep, err := rl.Drain(a.ctx)
		if err != nil {
			return err
		}
		if c.JSON {
			return a.printJSON(rep)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "applied\t%d\t\n", rep.Applied)
		fmt.Fprintf(tw, "already in target / done before\t%d\t\n", rep.AlreadyDone)
		fmt.Fprintf(tw, "not applied, left for review\t%d\t\n", rep.Unapplied)
		fmt.Fprintf(tw, "failed attempts\t%d\t\n", rep.Failed)
		fmt.Fprintf(tw, "dead-lettered\t%d\t\n", rep.DeadLettered)
		fmt.Fprintf(tw, "waiting for a later retry\t%d\t\n", rep.RetryLater)
		fmt.Fprintf(tw, "took\t%s\t\n", rep.Duration.Round(time.Millisecond))
		return tw.Flush()
	}
	a.logger.Info("applying repair commands continuously; stop with Ctrl-C", append([]any{"workers", c.Workers}, c.notifyFlags.describe()...)...)
	if err := rl.Start(a.ctx); err != nil {
		return err
	}
	<-a.ctx.Done()
	if err := rl.Stop(contextWithoutCancel(a)); err != nil && !errors.Is(err, a.ctx.Err()) {
		return err
	}
	return nil
}
