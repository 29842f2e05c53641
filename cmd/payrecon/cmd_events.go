package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
)

// eventsCmd is `payrecon events`: the events catch-up on its own.
type eventsCmd struct {
	stripeFlags
	Once  bool          `help:"Catch up from the cursor to the newest event, print what was done, and exit."`
	Since time.Duration `default:"72h" help:"First run only (no cursor yet): start from the events created this long ago; at most Stripe's 30 days are used."`
	eventsIntervalFlag
	rpsFlag
	Wait bool `help:"When another process holds the events lease, wait for it instead of exiting with status 3."`
	JSON bool `help:"Print the summary as JSON."`
	notifyFlags
	leaseTimeoutFlag
	ignoreFlags
	repairModeFlag
	sessionColumnFlag
	accountColumnFlag
}

// checkDetectionFlags validates the catch-up and recent-window durations:
// negative values are a usage error (0 turns each off).
func checkDetectionFlags(interval, recent, recentInterval time.Duration) error {
	switch {
	case interval < 0:
		return usageError{fmt.Errorf("--events-interval must not be negative, got %s (0 turns the catch-up off)", interval)}
	case interval > 0 && interval < time.Second:
		return usageError{fmt.Errorf("--events-interval must be at least 1s, got %s (0 turns the catch-up off)", interval)}
	case recent < 0:
		return usageError{fmt.Errorf("--recent must not be negative, got %s (0 turns the recent window off)", recent)}
	case recent > payrecon.EventRetention*12:
		return usageError{fmt.Errorf("--recent %s is longer than a recent window is for (at most 360 days); the full cycle covers every row", recent)}
	case recentInterval < 0:
		return usageError{fmt.Errorf("--recent-interval must not be negative, got %s (0 turns the recent window off)", recentInterval)}
	}
	return nil
}

func (c *eventsCmd) Run(a *app) error {
	if err := checkDetectionFlags(c.EventsInterval, 0, 0); err != nil {
		return err
	}
	if err := c.leaseTimeoutFlag.check(); err != nil {
		return err
	}
	switch {
	case c.Since <= 0:
		return usageError{fmt.Errorf("--since must be positive, got %s", c.Since)}
	case c.RPS < 0:
		return usageError{fmt.Errorf("--rps must not be negative, got %g (0 means unlimited)", c.RPS)}
	case !c.Once && c.EventsInterval == 0:
		return usageError{fmt.Errorf("--events-interval 0 without --once does nothing: use --once, or a positive interval")}
	}
	if c.Since > catchup.MaxSince {
		a.logger.Warn("--since is beyond what Stripe keeps; using 30 days less an hour", "since", c.Since, "used", catchup.MaxSince)
	}
	nc, err := c.notifyFlags.config()
	if err != nil {
		return err
	}
	limiter := budget.NewLimiter(c.RPS)
	gw, err := a.gateway(c.stripeFlags, limiter.OnRateLimited)
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	if err := a.checkAccess(gw, stripeapi.AccessNeeds{Events: true}); err != nil {
		return err
	}
	a.logger.Info("configuration", logAttrs(a.cli.databaseSettings(), c.stripeFlags.settings(), []setting{
		{"since", "--since", c.Since}, {"rps", "--rps", c.RPS},
		{"events_interval", "PAYRECON_EVENTS_INTERVAL / --events-interval", c.EventsInterval},
	}, c.repairModeFlag.settings())...)
	a.logger.Info("notifications", c.notifyFlags.describe()...)
	// The webhook's processor: the same dedupe, writer and findings.
	writer, err := a.notifyingWriter(a.ctx, pool, nc)
	if err != nil {
		return err
	}
	events := postgres.NewEvents(pool, writer, nil)
	if events.Ignore, err = c.ignore(); err != nil {
		return err
	}
	// checkout.session.* events apply to the row of their session.
	if events.Sessions, err = a.sessionColumn(pool, c.sessionColumnFlag); err != nil {
		return err
	}
	// On a platform every event is checked against its row's account: one
	// whose top-level account is not the row's is never applied and opens
	// account_mismatch, as at the webhook and in run's catch-up.
	if events.Accounts, err = a.accountColumn(pool, c.accountColumnFlag); err != nil {
		return err
	}
	if events.RepairMode = c.mode(); events.RepairMode.Holds() {
		rl, err := a.insertOnlyRelay(pool)
		if err != nil {
			return err
		}
		events.HoldFunc = rl.HoldFunc()
	}
	caught := events.WithSource(payrecon.SourceEvents)
	cat := catchup.New(gw, caught, postgres.NewEventCursors(pool), catchup.Config{
		Interval: c.EventsInterval, Since: c.Since, Limiter: limiter, Logger: a.logger.With("component", "events"),
		LeaseFunc: leaseFunc(pool, c.LeaseTimeout), WaitForLease: c.Wait,
	})
	if !c.Once {
		a.logger.Info("catching up continuously; stop with Ctrl-C", "job", cat.Config().Job, "interval", c.EventsInterval)
		return cat.Run(a.ctx)
	}
	rep, err := cat.RunOnce(a.ctx)
	if err != nil {
		if errors.Is(err, payrecon.ErrLeaseHeld) {
			return fmt.Errorf("%w: wait for it with --wait, or stop the other catcher", err)
		}
		return err
	}
	if c.JSON {
		return a.printJSON(rep)
	}
	printCatchUp(a, rep)
	return nil
}

func printCatchUp(a *app, rep catchup.Report) {
	fmt.Fprintf(a.stdout, "events %s: caught up in %s\n", rep.Job, payrecon.FormatDuration(rep.Duration))
	if r := rep.Reset; r != nil {
		if r.LostFrom.IsZero() {
			fmt.Fprintf(a.stdout, "cursor restarted from %s (%s); nothing was lost\n", r.StartFrom.UTC().Format(time.RFC3339), r.Reason)
		} else {
			fmt.Fprintf(a.stdout, "WARNING: cursor restarted from %s (%s): events created %s to %s were not caught up; the sweep covers them\n",
				r.StartFrom.UTC().Format(time.RFC3339), r.Reason, r.LostFrom.UTC().Format(time.RFC3339), r.LostTo.UTC().Format(time.RFC3339))
		}
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "events processed\t%d\t\n", rep.Processed)
	for _, o := range []string{string(payrecon.Applied), string(payrecon.AlreadyInTarget), string(payrecon.MovedElsewhere),
		string(payrecon.PaymentMissing), payrecon.OutcomeIgnored, payrecon.OutcomeMoneyFinding, payrecon.OutcomeHeld, payrecon.OutcomeNotApplied,
		catchup.OutcomeDuplicate, catchup.OutcomeRefused} {
		if n := rep.Outcomes[o]; n > 0 {
			fmt.Fprintf(tw, "  %s\t%d\t\n", o, n)
		}
	}
	if rep.MaxDelay > 0 {
		fmt.Fprintf(tw, "largest detection delay\t%s\t\n", payrecon.FormatDuration(rep.MaxDelay))
	}
	fmt.Fprintf(tw, "Stripe requests\t%d\t\n", rep.Requests)
	_ = tw.Flush()
	if rep.Cursor != "" {
		fmt.Fprintf(a.stdout, "cursor at %s\n", rep.Cursor)
	}
}

// checkAccess proves, before any work, that the key may do what the
// configuration needs (stripeapi.CheckAccess: Charges: Read for the
// expanded charge, Events: Read for the catch-up): a 403 names the
// permission and exits 2. An outage only warns; the work retries.
func (a *app) checkAccess(gw payrecon.Gateway, needs stripeapi.AccessNeeds) error {
	ac, ok := gw.(interface {
		CheckAccess(context.Context, stripeapi.AccessNeeds) error
	})
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	err := ac.CheckAccess(ctx, needs)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, payrecon.ErrConfig):
		return err
	case a.ctx.Err() != nil:
		return a.ctx.Err()
	}
	a.logger.Warn("Stripe did not answer the access check; going on", "error", err)
	return nil
}
