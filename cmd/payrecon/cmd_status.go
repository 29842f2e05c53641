package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

type statusCmd struct {
	Estimate bool `help:"Use PostgreSQL's row estimate instead of count(*) (instant on very large tables)."`
	JSON     bool `help:"Print JSON."`
	jobFlag
	Account string `placeholder:"acct_…" help:"Connect: show this account's sweep job and events cursor too (\"platform\" for the platform's own rows)."`
	moneyFlags
	readShareFlag
	sweepModeFlag
	minCycleFlag
}

// allocationStatus is each account's projected reads over Stripe's 30
// days against its read allocation, the worst first, and the platform's
// summed over its accounts.
type allocationStatus struct {
	Share    float64                    `json:"read_share"`
	Accounts []accountAllocation        `json:"accounts"`
	Platform *payrecon.AllocationResult `json:"platform,omitempty"`
}

type accountAllocation struct {
	Account string `json:"account"`
	payrecon.AllocationResult
}

// moneyStatus is what status says about the money checks: which local
// columns are compared (from the catalogue, as run detects them) and which
// kinds are ignored.
type moneyStatus struct {
	Columns     postgres.MoneyColumns `json:"money_columns"`
	IgnoreKinds []payrecon.Kind       `json:"ignore_kinds"`
	// Sessions is the Checkout Session column, as detected.
	Sessions postgres.SessionColumn `json:"session_column"`
}

func (c *statusCmd) Run(a *app) error {
	ignore, err := c.moneyFlags.ignore()
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	accounts, err := a.accountColumn(pool, c.accountColumnFlag)
	if err != nil {
		return err
	}
	mon := postgres.NewMonitor(pool)
	var only string
	if c.Account != "" {
		acct, err := accountArg(c.Account)
		if err != nil {
			return err
		}
		if !accounts.Found {
			return usageError{fmt.Errorf("--account %s: payments has no account column (%s)", c.Account, accounts.Problem)}
		}
		only = payrecon.AccountJob(c.Job, acct)
		mon = mon.WithJob(only)
	}
	now := a.clock.Now()
	base := ""
	if accounts.Found {
		base = c.Job // the platform's lag is its worst account's
	}
	st, as, err := mon.Figures(a.ctx, now, !c.Estimate, relay.Kind, base)
	if err != nil {
		return err
	}
	if only != "" {
		st.Jobs = slices.DeleteFunc(st.Jobs, func(j postgres.JobStatus) bool { return j.Job != only })
		if len(st.Jobs) == 0 {
			return fmt.Errorf("no sweep job %s yet: the account has not been swept (payrecon scan --once --account %s, or run)", only, c.Account)
		}
	}
	q, err := mon.Queue(a.ctx, relay.NotifyKind)
	if err != nil {
		return err
	}
	st.Notifications = &q
	cols, err := postgres.DetectMoneyColumns(a.ctx, pool, c.AmountColumn, c.CurrencyColumn)
	if err != nil {
		return err
	}
	sessions, err := postgres.DetectSessionColumn(a.ctx, pool, c.SessionColumn)
	if err != nil {
		return err
	}
	ms := moneyStatus{Columns: cols, IgnoreKinds: []payrecon.Kind{}, Sessions: sessions}
	for _, k := range payrecon.Kinds {
		if ignore[k] {
			ms.IgnoreKinds = append(ms.IgnoreKinds, k)
		}
	}
	alloc, err := c.allocation(a, pool, accounts, now)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(struct {
			postgres.Status
			moneyStatus
			Accounts   *postgres.AccountsStatus `json:"accounts,omitempty"`
			Allocation allocationStatus         `json:"read_allocation"`
		}{st, ms, as, alloc})
	}
	printStatus(a.stdout, st)
	if as != nil {
		printAccounts(a.stdout, now, *as)
	}
	printAllocation(a.stdout, alloc)
	printMoneyStatus(a.stdout, ms, ignore)
	return nil
}

// allocation projects each account's reads (one count of payments).
func (c *statusCmd) allocation(a *app, pool *pgxpool.Pool, col postgres.AccountColumn, now time.Time) (allocationStatus, error) {
	out := allocationStatus{Share: c.ReadShare, Accounts: []accountAllocation{}}
	mode, err := sweep.ParseMode(c.Mode)
	if err != nil {
		return out, usageError{err}
	}
	vols, err := postgres.AccountVolumes(a.ctx, pool, col, now.Add(-payrecon.AllocationWindow))
	if err != nil {
		return out, err
	}
	var total payrecon.AllocationInput
	for _, v := range vols {
		in := payrecon.AllocationInput{Rows: v.Rows, Transactions: v.Recent, ReadsPerRow: mode.ReadsPerRow(), Cycle: c.MinCycle, Share: c.ReadShare}
		out.Accounts = append(out.Accounts, accountAllocation{Account: v.Account, AllocationResult: payrecon.Allocate(in)})
		total.Rows += v.Rows
		total.Transactions += v.Recent
	}
	slices.SortFunc(out.Accounts, func(x, y accountAllocation) int {
		rx, ry := x.ProjectedReads/float64(x.Allocation), y.ProjectedReads/float64(y.Allocation)
		return cmp.Compare(ry, rx)
	})
	out.Accounts = out.Accounts[:min(len(out.Accounts), 10)]
	if col.Found {
		p := payrecon.Allocate(payrecon.AllocationInput{Rows: total.Rows, Transactions: total.Transactions,
			ReadsPerRow: mode.ReadsPerRow(), Cycle: c.MinCycle, Share: c.ReadShare})
		out.Platform = &p
	}
	return out, nil
}

func printAllocation(w io.Writer, al allocationStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\nread allocation\t(Stripe: 500 reads per transaction over 30 days, at least 10,000; --read-share %.2f)\n", al.Share)
	line := func(name string, r payrecon.AllocationResult) {
		note := ""
		if r.Stretched {
			note = fmt.Sprintf("; cycle stretched to %s by --read-share", payrecon.FormatDuration(r.MinCycle))
		}
		fmt.Fprintf(tw, "  %s\t%s reads / 30 days of %s allowed (%d rows, %d transactions)%s\n", name,
			thousands(int64(math.Round(r.ProjectedReads))), thousands(r.Allocation), r.Rows, r.Transactions, note)
	}
	if al.Platform != nil && len(al.Accounts) > 0 {
		line("platform (all accounts)", *al.Platform)
	} else if al.Platform != nil {
		line("the account", *al.Platform)
	}
	for _, x := range al.Accounts {
		line(accountLabel(x.Account), x.AllocationResult)
	}
	_ = tw.Flush()
}

// printAccounts is status's summary of a platform's account sweeps.
func printAccounts(w io.Writer, now time.Time, as postgres.AccountsStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "\naccounts\t%d swept as their own jobs, %d completed a cycle, %d behind (no cycle completed within %s)\n",
		as.Accounts, as.Completed, as.Behind, payrecon.FormatDuration(as.BehindAfter))
	for _, l := range as.Worst {
		name := l.Account
		if name == "" {
			name = "platform"
		}
		fmt.Fprintf(tw, "  %s\tlag %s, last cycle %s\n", name, payrecon.FormatDuration(l.Lag), ago(now, l.LastCycleCompletedAt))
	}
	if as.EventCursors > 0 {
		fmt.Fprintf(tw, "  events\t%d connected accounts caught up, the furthest behind by %s, the longest last detection delay %s\n",
			as.EventCursors, payrecon.FormatDuration(as.EventsWorstAge), payrecon.FormatDuration(as.EventsWorstDelay))
	}
	_ = tw.Flush()
}

func printMoneyStatus(w io.Writer, ms moneyStatus, ignore map[payrecon.Kind]bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "money checks\tamount %s, currency %s\n",
		describeMoney(ms.Columns.AmountColumn, ms.Columns.Amount, ms.Columns.AmountProblem),
		describeMoney(ms.Columns.CurrencyColumn, ms.Columns.Currency, ms.Columns.CurrencyProblem))
	fmt.Fprintf(tw, "session column\t%s\n", ms.Sessions.Describe())
	fmt.Fprintf(tw, "ignored kinds\t%s\n", ignoredList(ignore))
	_ = tw.Flush()
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return payrecon.FormatDuration(now.Sub(t)) + " ago"
}

func printStatus(w io.Writer, st postgres.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	lag := "— (no payments)"
	if st.LagKnown {
		lag = payrecon.FormatDuration(st.Lag) + "\t(age of the row least recently verified)"
	}
	fmt.Fprintf(tw, "reconciliation lag\t%s\n", lag)
	est := ""
	if !st.RowsExact {
		est = " (estimate)"
	}
	fmt.Fprintf(tw, "payments\t%d rows%s, %.0f new rows/h (last 24 h)\n", st.Rows, est, st.NewRowsPerHour)
	var warnings []string
	if len(st.Jobs) == 0 {
		fmt.Fprintf(tw, "sweep\tnever run: start one with `payrecon scan --once` or `payrecon run`\n")
	}
	for _, j := range st.Jobs {
		if j.Recent {
			fmt.Fprintf(tw, "\njob %s\t(recent window: re-verifies the rows created within it)\n", j.Job)
			fmt.Fprintf(tw, "  current cycle\tstarted %s, %d rows so far\n", ago(st.Now, j.CycleStartedAt), j.CycleRows)
		} else {
			fmt.Fprintf(tw, "\njob %s\t\n", j.Job)
			fmt.Fprintf(tw, "  current cycle\tstarted %s, %.0f%% swept (%d of %d rows)\n", ago(st.Now, j.CycleStartedAt), 100*j.Progress, j.CycleRows, st.Rows)
		}
		last := "never completed"
		if !j.LastCycleCompletedAt.IsZero() {
			last = fmt.Sprintf("%s, took %s (%d rows)", ago(st.Now, j.LastCycleCompletedAt), payrecon.FormatDuration(j.LastCycleDuration), j.LastCycleRows)
		}
		fmt.Fprintf(tw, "  last completed cycle\t%s\n", last)
		switch {
		case j.Recent: // a window has no projection over the whole table
		case j.Throughput > 0:
			fmt.Fprintf(tw, "  throughput\t%.1f rows/s (measured)\n", j.Throughput)
			fmt.Fprintf(tw, "  projected cycle time\t%s\n", j.Projection.Verdict)
			if !j.Projection.Completes {
				warnings = append(warnings, fmt.Sprintf("job %s: %s", j.Job, j.Projection.Verdict))
			}
		default:
			fmt.Fprintf(tw, "  throughput\tnot measured yet\n")
		}
		holder := "nobody (no sweeper running)"
		if j.LeaseHolder != nil {
			holder = j.LeaseHolder.String()
		}
		fmt.Fprintf(tw, "  swept by\t%s\n", holder)
		if len(j.Rechecks) > 0 {
			fmt.Fprintf(tw, "  rechecks queued\tunverifiable %d, grace window %d, changed %d\n",
				j.Rechecks[payrecon.RecheckUnverifiable], j.Rechecks[payrecon.RecheckGrace], j.Rechecks[payrecon.RecheckChanged])
		}
	}
	for _, e := range st.Events {
		warnings = append(warnings, printEvents(tw, st.Now, e)...)
	}
	fmt.Fprintf(tw, "\nopen findings\t%d\n", st.OpenFindingsTotal)
	for _, k := range payrecon.Kinds {
		if n := st.OpenFindings[k]; n > 0 {
			fmt.Fprintf(tw, "  %s\t%d\n", k, n)
		}
	}
	if len(st.ResolvedLastDay) > 0 {
		var total int64
		by := map[payrecon.Resolution]int64{}
		for _, rc := range st.ResolvedLastDay {
			total += rc.Count
			by[rc.Resolution] += rc.Count
		}
		fmt.Fprintf(tw, "resolved in 24 h\t%d (repaired %d, already in target %d, healed %d, superseded %d, by hand %d)\n", total,
			by[payrecon.ResolvedRepaired], by[payrecon.ResolvedAlreadyInTarget], by[payrecon.ResolvedHealed], by[payrecon.ResolvedSuperseded], by[payrecon.ResolvedOperator])
	}
	backlog := fmt.Sprintf("%d waiting", st.OutboxBacklog)
	if st.OutboxBacklog > 0 {
		backlog += fmt.Sprintf(" (oldest queued %s)", ago(st.Now, st.OutboxOldest))
	}
	fmt.Fprintf(tw, "repair queue\t%s, %d dead letters\n", backlog, st.DeadLetters)
	if st.HeldRepairs > 0 {
		fmt.Fprintf(tw, "held for review\t%d repair commands (longest waiting since %s): `payrecon repairs list`, then `payrecon repairs approve`\n",
			st.HeldRepairs, ago(st.Now, st.HeldOldest))
	} else {
		fmt.Fprintf(tw, "held for review\t0 repair commands\n")
	}
	if st.DeadLetters > 0 {
		warnings = append(warnings, fmt.Sprintf("%d repair commands were dead-lettered: see `payrecon relay --dead-letters` and retry them with `payrecon relay --retry JOB_ID`", st.DeadLetters))
	}
	if q := st.Notifications; q != nil && (q.Backlog > 0 || q.DeadLetters > 0) {
		nb := fmt.Sprintf("%d waiting", q.Backlog)
		if q.Backlog > 0 {
			nb += fmt.Sprintf(" (oldest %s)", ago(st.Now, q.Oldest))
		}
		fmt.Fprintf(tw, "notifications\t%s, %d dead letters\n", nb, q.DeadLetters)
		if q.DeadLetters > 0 {
			warnings = append(warnings, fmt.Sprintf("%d notifications to the application were dead-lettered: see `payrecon relay --dead-letters` and retry them with `payrecon relay --retry JOB_ID`", q.DeadLetters))
		}
	}
	_ = tw.Flush()
	for _, wmsg := range warnings {
		fmt.Fprintf(w, "WARNING: %s\n", wmsg)
	}
}

// printEvents prints one events catch-up cursor and returns its warnings.
func printEvents(tw io.Writer, now time.Time, e postgres.EventsStatus) []string {
	var warnings []string
	fmt.Fprintf(tw, "\nevents %s\t(catch-up: Stripe's events through the webhook's code path)\n", e.Job)
	at := "none yet (starts from " + e.StartFrom.UTC().Format(time.RFC3339) + ")"
	if e.EventID != "" {
		at = fmt.Sprintf("%s, created %s", e.EventID, ago(now, e.EventCreated))
	}
	fmt.Fprintf(tw, "  cursor\t%s\n", at)
	fmt.Fprintf(tw, "  up to date\t%s\t(age of the last round that reached the newest event)\n", ago(now, e.CheckedAt))
	var total int64
	for _, n := range e.Outcomes {
		total += n
	}
	fmt.Fprintf(tw, "  events processed\t%d (applied %d, already in target %d, moved elsewhere %d, no local row %d, ignored %d, duplicate %d, refused %d)\n",
		total, e.Outcomes[string(payrecon.Applied)], e.Outcomes[string(payrecon.AlreadyInTarget)], e.Outcomes[string(payrecon.MovedElsewhere)],
		e.Outcomes[string(payrecon.PaymentMissing)], e.Outcomes[payrecon.OutcomeIgnored], e.Outcomes["duplicate"], e.Outcomes["refused"])
	if !e.LastAppliedAt.IsZero() {
		fmt.Fprintf(tw, "  last caught up\t%s, %s after Stripe created it\n", ago(now, e.LastAppliedAt), payrecon.FormatDuration(e.LastDelay))
	}
	holder := "nobody (no catch-up running)"
	if e.LeaseHolder != nil {
		holder = e.LeaseHolder.String()
	}
	fmt.Fprintf(tw, "  caught up by\t%s\n", holder)
	if e.Resets > 0 {
		fmt.Fprintf(tw, "  cursor restarts\t%d, the last %s: %s\n", e.Resets, ago(now, e.ResetAt), e.ResetReason)
	}
	if e.Losses > 0 {
		warnings = append(warnings, fmt.Sprintf("events %s: the cursor was older than Stripe's 30 days; events created %s to %s were not caught up (the sweep covers them)",
			e.Job, e.LostFrom.UTC().Format(time.RFC3339), e.LostTo.UTC().Format(time.RFC3339)))
	}
	return warnings
}
