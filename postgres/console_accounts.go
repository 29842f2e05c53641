package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// ConsoleAccounts is the console's Accounts pages' reader
// (console.AccountsReader) on a platform on Connect. Every figure comes
// from the reader `payrecon status` uses: an account's lag and whether it
// is behind from Monitor.EachAccount, its cycle and cursor from
// Monitor.Cycles, its events from Monitor.EventsStatus, its findings from
// Findings.List with the account filter of `findings list --account`.
type ConsoleAccounts struct {
	pool     *pgxpool.Pool
	monitor  *Monitor
	findings *Findings
	col      AccountColumn
	base     string
	counts   string
	// alloc, when set, projects an account's reads (WithAllocation).
	alloc *allocationParams
}

// allocationParams are the sweep's figures the read allocation's
// projection needs.
type allocationParams struct {
	readsPerRow float64
	minCycle    time.Duration
	minCycles   map[string]time.Duration
}

// NewConsoleAccounts returns the reader of base's account jobs (the sweep
// job's name, sweep.DefaultJob) on pool, with the account column col.
func NewConsoleAccounts(pool *pgxpool.Pool, col AccountColumn, base string) *ConsoleAccounts {
	return &ConsoleAccounts{pool: pool, monitor: NewMonitor(pool), findings: NewFindings(pool, nil), col: col, base: base,
		counts: accountSQL(queries.Get("console_account_findings"), col)}
}

func accountLine(l AccountLag) readmodel.AccountLine {
	return readmodel.AccountLine{Account: l.Account, Job: l.Job, Lag: l.Lag, LastCycleCompletedAt: l.LastCycleCompletedAt, Behind: l.Behind}
}

// WithAllocation returns the reader that also projects an account's reads
// over Stripe's 30 days against its read allocation (payrecon.Allocate, as
// status does), for a sweep that reads readsPerRow per row
// (sweep.Mode.ReadsPerRow) every minCycle, or an account's longer cycle in
// minCycles (run's --read-share: service.Config.MinCycles).
func (c *ConsoleAccounts) WithAllocation(readsPerRow float64, minCycle time.Duration, minCycles map[string]time.Duration) *ConsoleAccounts {
	r := *c
	r.alloc = &allocationParams{readsPerRow: readsPerRow, minCycle: minCycle, minCycles: minCycles}
	return &r
}

// Summary implements console.AccountsReader: status's accounts summary.
func (c *ConsoleAccounts) Summary(ctx context.Context, now time.Time) (readmodel.AccountsSummary, error) {
	st, err := c.monitor.AccountsStatus(ctx, now, c.base)
	if err != nil {
		return readmodel.AccountsSummary{}, err
	}
	out := readmodel.AccountsSummary{Accounts: st.Accounts, Completed: st.Completed, Behind: st.Behind, BehindAfter: st.BehindAfter, Lag: st.Lag}
	for _, l := range st.Worst {
		out.Worst = append(out.Worst, accountLine(l))
	}
	return out, nil
}

// Accounts implements console.AccountsReader.
func (c *ConsoleAccounts) Accounts(ctx context.Context, now time.Time, after string, limit int) ([]readmodel.AccountLine, bool, error) {
	from := ""
	started := after == ""
	if after != "" && after != "platform" {
		from = after
	}
	var all []readmodel.AccountLine
	err := c.monitor.EachAccount(ctx, now, c.base, func(l AccountLag) error {
		if started || l.Account > from {
			all = append(all, accountLine(l))
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(all, func(x, y readmodel.AccountLine) int { return cmp.Compare(x.Account, y.Account) })
	more := len(all) > limit
	all = all[:min(len(all), limit)]
	accounts := make([]string, len(all))
	for i, l := range all {
		accounts[i] = l.Account
	}
	open, err := c.openFindings(ctx, accounts)
	if err != nil {
		return nil, false, err
	}
	for i := range all {
		for _, k := range open[all[i].Account] {
			all[i].OpenFindings += k.Count
		}
	}
	return all, more, nil
}

// openFindings counts the accounts' open findings by kind, the most first.
func (c *ConsoleAccounts) openFindings(ctx context.Context, accounts []string) (map[string][]readmodel.AccountKindCount, error) {
	out := map[string][]readmodel.AccountKindCount{}
	if len(accounts) == 0 {
		return out, nil
	}
	rows, err := c.pool.Query(ctx, c.counts, pgx.StrictNamedArgs{"accounts": accounts})
	if err != nil {
		return nil, fmt.Errorf("count the accounts' open findings: %w", err)
	}
	var (
		acct string
		kc   readmodel.AccountKindCount
	)
	if _, err := pgx.ForEachRow(rows, []any{&acct, &kc.Kind, &kc.Count}, func() error {
		out[acct] = append(out[acct], kc)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("count the accounts' open findings: %w", err)
	}
	return out, nil
}

// Account implements console.AccountsReader.
func (c *ConsoleAccounts) Account(ctx context.Context, now time.Time, account string) (readmodel.AccountDetail, error) {
	var d readmodel.AccountDetail
	job := payrecon.AccountJob(c.base, account)
	found := false
	errFound := errors.New("found")
	err := c.monitor.EachAccount(ctx, now, c.base, func(l AccountLag) error {
		if l.Job != job {
			return nil
		}
		d.AccountLine, found = accountLine(l), true
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return d, err
	}
	if !found {
		return d, fmt.Errorf("account %q: %w", account, payrecon.ErrNotFound)
	}
	cycles, err := c.monitor.Cycles(ctx, now)
	if err != nil {
		return d, err
	}
	for _, cy := range cycles {
		if cy.Job != job {
			continue
		}
		d.LastID, d.CycleStartedAt, d.CycleRows, d.AdvancedAt = cy.LastID, cy.CycleStartedAt, cy.CycleRows, cy.AdvancedAt
		d.LastCycleDuration, d.LastCycleRows, d.Throughput = cy.LastCycleDuration, cy.LastCycleRows, cy.Throughput()
	}
	if d.Rechecks, err = pendingRechecks(ctx, c.pool, job); err != nil {
		return d, err
	}
	holder, err := LeaseHolderOf(ctx, c.pool, job)
	if err != nil {
		return d, err
	}
	if holder != nil {
		d.LeaseHolder = holder.String()
	}
	if account != "" {
		events, err := c.monitor.EventsStatus(ctx, now)
		if err != nil {
			return d, err
		}
		for _, e := range events {
			if IsAccountJob(e.Job) && strings.HasSuffix(e.Job, "/"+account) { // its catch-up: events/acct_…
				d.Events = &readmodel.AccountEvents{Job: e.Job, EventID: e.EventID, Age: e.Age, LastDelay: e.LastDelay}
			}
		}
	}
	if c.alloc != nil {
		v, err := AccountVolume(ctx, c.pool, c.col, account, now.Add(-payrecon.AllocationWindow))
		if err != nil {
			return d, err
		}
		cycle := c.alloc.minCycle
		if m := c.alloc.minCycles[account]; m > cycle {
			cycle, d.Stretched = m, true
		}
		r := payrecon.Allocate(payrecon.AllocationInput{Rows: v.Rows, Transactions: v.Recent, ReadsPerRow: c.alloc.readsPerRow, Cycle: cycle})
		d.Allocation = &r
	}
	open, err := c.openFindings(ctx, []string{account})
	if err != nil {
		return d, err
	}
	d.OpenByKind = open[account]
	for _, k := range d.OpenByKind {
		d.OpenFindings += k.Count
	}
	fs, err := c.findings.List(ctx, FindingFilter{State: "open", Account: &account, Accounts: c.col, Limit: readmodel.AccountFindingsShown})
	if err != nil {
		return d, err
	}
	for _, f := range fs {
		af := readmodel.AccountFinding{ID: f.ID, IntentID: f.IntentID, Kind: f.Kind, Verdict: f.Verdict, Reason: f.Reason, DetectedAt: f.DetectedAt}
		if f.PaymentID != nil {
			af.PaymentID = *f.PaymentID
		}
		d.Findings = append(d.Findings, af)
	}
	return d, nil
}
