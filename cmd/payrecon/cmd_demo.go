package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/demo"
	"github.com/payrecon/payrecon/internal/pglocal"
	"github.com/payrecon/payrecon/postgres"
)

// stripeEndpointRPS is Stripe's default per-endpoint rate limit, for the
// honest figure beside the simulator's.
const stripeEndpointRPS = 25

// localServerURL is the local PostgreSQL the demo tries when DATABASE_URL is
// unset.
const localServerURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// demoCmd is `payrecon demo`. Exit status: 0 when every check passes, 1 when
// payrecon got something wrong (a drift missed or not repaired, a false
// finding, a row touched that should not have been) or the demo could not
// finish, 2 for a database that does not answer, 130 on Ctrl-C.
type demoCmd struct {
	Payments int           `default:"10000" help:"Local payments rows to seed (at least 100)."`
	Seed     uint64        `default:"1" help:"Seed of the scenario: the same seed injects the same drifts into the same rows."`
	Keep     bool          `help:"Keep the demo database afterwards and print its URL."`
	JSON     bool          `help:"Print the report as JSON."`
	Timeout  time.Duration `default:"10m" help:"Give up after this long."`
	Admin    string        `name:"admin-addr" default:"127.0.0.1:0" help:"Loopback address of the embedded service's console (/console/), River's dashboard and /metrics while the demo runs; port 0 picks a free one (the log says which)."`
	Accounts int           `placeholder:"N" help:"Play the demo as a platform on Stripe Connect: payments gets the account column (stripe_account_id), its rows spread over the platform's own account and N connected accounts with drift in each, every account swept as its own job through River; the scorecard is per account (at most 2% of --payments, minus one)."`
	Tamper   int           `hidden:"" help:"Self-test of the check: touch this many in-sync rows behind the canonical writer's back during the run; the demo must then FAIL."`
	// Throwaway exercises the last resort on purpose, like scripts/lib.sh's
	// PAYRECON_THROWAWAY_PG.
	Throwaway bool `hidden:"" help:"Ignore DATABASE_URL and the local server: always use a throwaway cluster."`
}

func (c *demoCmd) Run(a *app) error {
	if c.Payments < demo.MinPayments {
		return usageError{fmt.Errorf("--payments must be at least %d (every kind of drift needs a few rows), got %d", demo.MinPayments, c.Payments)}
	}
	if c.Accounts < 0 || c.Accounts > demo.MaxAccounts(c.Payments) {
		return usageError{fmt.Errorf("--accounts must be between 0 and %d for %d payments (every account needs drift of its own), got %d", demo.MaxAccounts(c.Payments), c.Payments, c.Accounts)}
	}
	if c.Timeout <= 0 {
		return usageError{fmt.Errorf("--timeout must be positive, got %s", c.Timeout)}
	}
	ctx, cancel := context.WithTimeout(a.ctx, c.Timeout)
	defer cancel()
	log := a.logger.With("component", "demo")

	server, stop, err := c.server(ctx, a)
	if err != nil {
		return err
	}
	defer stop()

	prog := newDemoProgress(a)
	rep, err := demo.Run(ctx, server, demo.Config{
		Payments:     c.Payments,
		Seed:         c.Seed,
		Keep:         c.Keep,
		Logger:       log,
		Progress:     prog.update,
		TamperInSync: c.Tamper,
		AdminAddr:    c.Admin,
		Accounts:     c.Accounts,
	})
	prog.done()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && a.ctx.Err() == nil {
			return fmt.Errorf("the demo did not finish within --timeout %s: %w", c.Timeout, err)
		}
		return fmt.Errorf("demo: %w", err)
	}
	if c.JSON {
		out := struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
			demo.Report
		}{rep.OK(), rep.Problems(), rep}
		if out.Problems == nil {
			out.Problems = []string{}
		}
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		printDemo(a, rep)
	}
	if !rep.OK() {
		return fmt.Errorf("demo FAILED: %s", strings.Join(rep.Problems(), "; "))
	}
	return nil
}

// server picks the PostgreSQL server: DATABASE_URL if set (it must answer),
// else the local server if it answers, else a throwaway cluster that stop
// removes.
func (c *demoCmd) server(ctx context.Context, a *app) (string, func(), error) {
	noop := func() {}
	if c.Throwaway {
		return c.throwaway(ctx, a)
	}
	if u := a.cli.DatabaseURL; u != "" {
		if err := ping(ctx, u, 10*time.Second); err != nil {
			return "", nil, configError{fmt.Errorf("DATABASE_URL is set but no PostgreSQL answers there: %w", err)}
		}
		a.logger.Info("demo uses the PostgreSQL server of DATABASE_URL")
		return u, noop, nil
	}
	if err := ping(ctx, localServerURL, 3*time.Second); err == nil {
		a.logger.Info("demo uses the local PostgreSQL server", "server", "127.0.0.1:5432")
		return localServerURL, noop, nil
	} else if ctx.Err() != nil {
		return "", nil, ctx.Err()
	}
	a.logger.Info("no PostgreSQL answers on 127.0.0.1:5432 and DATABASE_URL is unset: starting a throwaway cluster (removed at the end)")
	return c.throwaway(ctx, a)
}

// throwaway starts a throwaway cluster with initdb in a temporary folder.
func (c *demoCmd) throwaway(ctx context.Context, a *app) (string, func(), error) {
	if c.Keep {
		a.logger.Warn("--keep keeps the demo database only until the throwaway cluster is removed, at the end of this run")
	}
	u, stop, err := pglocal.Start(ctx, a.logger.With("component", "pglocal"))
	if err != nil {
		if errors.Is(err, pglocal.ErrNotInstalled) {
			return "", nil, configError{err}
		}
		return "", nil, fmt.Errorf("start a throwaway PostgreSQL: %w", err)
	}
	return u, stop, nil
}

// ping connects to url and closes again.
func ping(ctx context.Context, url string, timeout time.Duration) error {
	pool, err := postgres.Open(ctx, url, postgres.OpenConfig{ApplicationName: "payrecon demo", ConnectTimeout: timeout, MaxConns: 1})
	if err != nil {
		return err
	}
	pool.Close()
	return nil
}

// printDemo prints the report as a table and a PASS or FAIL line.
func printDemo(a *app, r demo.Report) {
	w := a.stdout
	fmt.Fprintf(w, "payrecon demo: %d payments and %d orphan PaymentIntents (seed %d) against the in-process Stripe simulator\n",
		r.Payments, r.OrphanIntents, r.Seed)
	wh := r.Webhooks
	fmt.Fprintf(w, "webhooks before the sweep: %d events, %d deliveries answered 200; %d dropped, %d duplicated, %d intents reordered\n",
		wh.Events, wh.Delivered, wh.Dropped, wh.Duplicated, wh.Reordered)
	if wh.WrongAccount > 0 {
		fmt.Fprintf(w, "  %d delivered as if from another account than their payment's (one per account: account_mismatch, never applied)\n", wh.WrongAccount)
	}
	fmt.Fprintf(w, "  webhook handler outcomes: %s\n", formatCounts(wh.Outcomes))
	if r.GraceOff {
		fmt.Fprintln(w, "grace window off: every webhook had landed before the sweep started, so no row is in flight")
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	width := len("total")
	for _, k := range r.Kinds {
		width = max(width, len(k.Kind))
	}
	// AlignRight right-aligns every column: pad the first one so that it
	// reads left-aligned.
	fmt.Fprintf(tw, "%-*s\tinjected\tdetected\trepaired\tleft for review\tmissed\t\n", width, "kind")
	var tot demo.KindReport
	for _, k := range r.Kinds {
		repaired := "—"
		if k.Repairable {
			repaired = fmt.Sprint(k.Repaired)
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%s\t%d\t%d\t\n", width, k.Kind, k.Injected, k.Detected, repaired, k.LeftForReview, k.Missed)
		tot.Injected += k.Injected
		tot.Detected += k.Detected
		tot.Repaired += k.Repaired
		tot.LeftForReview += k.LeftForReview
		tot.Missed += k.Missed
	}
	fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t\n", width, "total", tot.Injected, tot.Detected, tot.Repaired, tot.LeftForReview, tot.Missed)
	_ = tw.Flush()
	fmt.Fprintln(w)
	if r.Platform != nil {
		printDemoAccounts(w, *r.Platform)
		fmt.Fprintln(w)
	}
	printDemoSessions(w, r.Sessions)

	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "false findings\t%d\t(findings on rows or intents not injected with that kind)\n", r.FalseFindings)
	fmt.Fprintf(tw, "in-sync rows touched\t%d\tof %d (status, version or updated_at changed while the service ran)\n", r.InSyncTouched, r.InSyncRows)
	fmt.Fprintf(tw, "review rows touched\t%d\tof %d (drifts a person must decide on)\n", r.ReviewTouched, r.ReviewRows)
	if r.WrongState > 0 {
		fmt.Fprintf(tw, "rows the webhooks left wrong\t%d\t\n", r.WrongState)
	}
	sw := r.Sweep
	if pl := r.Platform; pl != nil {
		fmt.Fprintf(tw, "sweep cycles\t%s\t%d rows over %d accounts, each its own job in River's queue %q, %.0f rows/s\n", payrecon.FormatDuration(sw.Duration),
			sw.Rows, len(pl.Accounts), "accounts", sw.RowsPerSecond)
		fmt.Fprintf(tw, "wrong-account requests\t%d\t(intents read under another account's Stripe-Account: the simulator answers 404)\n", pl.WrongAccountRequests)
	} else {
		fmt.Fprintf(tw, "sweep cycle\t%s\t%d rows in %d batches, %.0f rows/s; verdicts %s\n", payrecon.FormatDuration(sw.Duration),
			sw.Rows, sw.Batches, sw.RowsPerSecond, formatVerdicts(sw.Verdicts))
	}
	fmt.Fprintf(tw, "Stripe requests\t%d\t%s (%.1f rows per request); the simulator is in-process, with no latency or rate limit:\n",
		sw.StripeRequests, formatCounts(sw.StripeByEndpoint), float64(sw.Rows)/float64(max(sw.StripeRequests, 1)))
	fmt.Fprintf(tw, "\t\tat Stripe's 25 requests/s per endpoint these requests alone take at least %s\n",
		payrecon.FormatDuration(time.Duration(float64(sw.StripeRequests)/stripeEndpointRPS*float64(time.Second))))
	rp := r.Repairs
	fmt.Fprintf(tw, "repairs\t%d\tapplied of %d commands, %d unprocessed; detection to repair median %s, max %s; queue empty %s after the cycle\n",
		rp.Applied, rp.Commands, rp.Unprocessed, payrecon.FormatDuration(rp.MedianLatency), payrecon.FormatDuration(rp.MaxLatency),
		payrecon.FormatDuration(rp.DrainAfterCycle))
	nt := r.Notifications
	fmt.Fprintf(tw, "notifications\t%d\tof %d transitions acknowledged by the demo's shop (it failed the first delivery of %d, one in ten: %d redeliveries),\n",
		nt.Acknowledged, nt.Transitions, nt.RefusedFirst, nt.Redelivered)
	fmt.Fprintf(tw, "\t\t%d of %d paid orders fulfilled exactly once (%d twice, %d never); transition to acknowledgement median %s, max %s (the webhook phase's waited for the service)\n",
		nt.FulfilledOnce, nt.PaidOrders, nt.FulfilledTwice, nt.NotFulfilled, payrecon.FormatDuration(nt.MedianDelay), payrecon.FormatDuration(nt.MaxDelay))
	ev := r.Events
	fmt.Fprintf(tw, "events catch-up\t%d\tof %d events lost while the webhook endpoint was down caught up (every %s), detection delay median %s, max %s;\n",
		ev.CaughtUp, ev.Lost, payrecon.FormatDuration(ev.Interval), payrecon.FormatDuration(ev.MedianDelay), payrecon.FormatDuration(ev.MaxDelay))
	fmt.Fprintf(tw, "\t\tthe sweep had passed their rows (%d swept): it would reach them next cycle; %d delivered by webhook; %d applied twice, %d missed\n",
		ev.SweepPassedAt, ev.Delivered, ev.AppliedTwice, ev.Missed)
	st := r.Settlement
	fmt.Fprintf(tw, "payouts\t%d\tpaid out (%d manual): %d lines read in %d requests, %s (%.0f lines/s); --settle-after %s;\n",
		st.Payouts, st.Manual, st.Lines, st.Requests, payrecon.FormatDuration(st.Duration), st.LinesPerSecond, payrecon.FormatDuration(st.SettleAfter))
	fmt.Fprintf(tw, "\t\t%d of %d payouts made wrong flagged by their own check (one off by one, one failed after it was paid), %d flagged in all\n",
		st.FlaggedRight, st.FlaggedInjected, st.Flagged)
	tm := r.Timings
	fmt.Fprintf(tw, "time\t%s\ttotal: setup %s, seed %s, webhooks %s, service %s, settlement %s\n", payrecon.FormatDuration(tm.Total),
		payrecon.FormatDuration(tm.Setup), payrecon.FormatDuration(tm.Seed), payrecon.FormatDuration(tm.Webhooks), payrecon.FormatDuration(tm.Service),
		payrecon.FormatDuration(tm.Settle))
	_ = tw.Flush()
	for _, s := range slices.Concat(r.FalseFindingSamples, r.TouchedSamples, r.WrongStateSamples, r.Events.Samples, r.Settlement.Samples) {
		fmt.Fprintf(w, "  e.g. %s\n", s)
	}
	if r.Kept {
		fmt.Fprintf(w, "database kept: %s\n  look around: DATABASE_URL='%s' payrecon findings list (or status)\n", r.DatabaseURL, r.DatabaseURL)
	} else {
		fmt.Fprintf(w, "database %s dropped\n", r.Database)
	}
	if r.OK() {
		fmt.Fprintln(w, "PASS: every injected drift was detected, the repairable ones repaired, every lost live event caught up once, and no other row was touched")
		return
	}
	fmt.Fprintf(w, "FAIL: %s\n", strings.Join(r.Problems(), "; "))
}

// formatCounts renders a map of counts as "a 1, b 2", keys sorted.
func formatCounts[K ~string, V int | int64](m map[K]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// formatVerdicts renders verdict counts in the documented order, without
// zeros.
func formatVerdicts(m map[payrecon.Verdict]int) string {
	var parts []string
	for _, v := range payrecon.Verdicts {
		if m[v] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, m[v]))
		}
	}
	return strings.Join(parts, ", ")
}

// demoProgress shows two bars on a terminal (rows swept, repairs applied)
// and a log line every two seconds otherwise.
type demoProgress struct {
	a       *app
	p       *mpb.Progress
	sweep   *mpb.Bar
	repair  *mpb.Bar
	lastLog time.Time
	last    demo.Progress
}

func newDemoProgress(a *app) *demoProgress {
	dp := &demoProgress{a: a, lastLog: time.Now()}
	if isTerminal(a.stderr) {
		dp.p = mpb.NewWithContext(a.ctx, mpb.WithOutput(a.stderr), mpb.WithWidth(48))
	}
	return dp
}

// update is demo.Config.Progress: it is called from one goroutine.
func (dp *demoProgress) update(p demo.Progress) {
	dp.last = p
	if dp.p != nil {
		if dp.sweep == nil {
			dp.sweep = dp.p.AddBar(int64(p.Rows),
				mpb.PrependDecorators(decor.Name("rows swept      "), decor.CountersNoUnit("%d / %d")),
				mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageSpeed(0, "%.0f rows/s")))
			dp.repair = dp.p.AddBar(int64(max(p.Repairs, 1)),
				mpb.PrependDecorators(decor.Name("repairs applied "), decor.CountersNoUnit("%d / %d")),
				mpb.AppendDecorators(decor.Percentage()))
		}
		dp.sweep.SetCurrent(int64(p.Swept))
		dp.repair.SetCurrent(int64(p.Repaired))
		return
	}
	if time.Since(dp.lastLog) >= 2*time.Second {
		dp.lastLog = time.Now()
		dp.a.logger.Info("demo progress", "phase", p.Phase, "swept", p.Swept, "of", p.Rows, "repairs_applied", p.Repaired, "of_repairs", p.Repairs)
	}
}

func (dp *demoProgress) done() {
	if dp.p == nil {
		return
	}
	for _, b := range []*mpb.Bar{dp.sweep, dp.repair} {
		if b != nil && !b.Completed() {
			b.Abort(false)
		}
	}
	dp.p.Wait()
}

// printDemoAccounts prints `demo --accounts`'s scorecard per account, and
// its total.
func printDemoAccounts(w io.Writer, p demo.PlatformReport) {
	fmt.Fprintf(w, "per account (column %s; the platform's own rows and %d connected accounts, each swept as its own job):\n", p.AccountColumn, max(len(p.Accounts)-1, 0))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	width := len("acct_1") + 15
	fmt.Fprintf(tw, "%-*s\trows\tswept\tinjected\tdetected\trepaired\tleft for review\tmissed\t\n", width, "account")
	var tot demo.AccountReport
	for _, a := range p.Accounts {
		name := a.Account
		if name == "" {
			name = "platform"
		}
		swept := fmt.Sprint(a.Swept)
		if !a.Completed {
			swept = "no cycle"
		}
		fmt.Fprintf(tw, "%-*s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t\n", width, name, a.Rows, swept, a.Injected, a.Detected, a.Repaired, a.LeftForReview, a.Missed)
		tot.Rows += a.Rows
		tot.Swept += a.Swept
		tot.Injected += a.Injected
		tot.Detected += a.Detected
		tot.Repaired += a.Repaired
		tot.LeftForReview += a.LeftForReview
		tot.Missed += a.Missed
	}
	fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", width, "total", tot.Rows, tot.Swept, tot.Injected, tot.Detected, tot.Repaired, tot.LeftForReview, tot.Missed)
	_ = tw.Flush()
}

// printDemoSessions prints the session rows' scorecard: a line per kind
// injected on them.
func printDemoSessions(w io.Writer, s demo.SessionReport) {
	fmt.Fprintf(w, "Checkout Session rows (a session, no PaymentIntent id): %d\n", s.Rows)
	for _, k := range s.Kinds {
		repaired := ""
		if k.Repairable {
			repaired = fmt.Sprintf(", %d repaired", k.Repaired)
		}
		fmt.Fprintf(w, "  %s: %d injected, %d detected%s, %d left for review, %d missed\n", k.Kind, k.Injected, k.Detected, repaired, k.LeftForReview, k.Missed)
	}
	fmt.Fprintln(w)
}
