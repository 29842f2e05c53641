package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// PlatformReport is `demo --accounts`: the demo played as a platform on
// Connect, its scorecard per account.
type PlatformReport struct {
	// AccountColumn is the column of payments that records each row's
	// connected account.
	AccountColumn string `json:"account_column"`
	// Accounts are the platform's own account ("") and then each
	// connected account, in that order.
	Accounts []AccountReport `json:"accounts"`
	// WrongAccountRequests counts the requests for an intent made under
	// another account's Stripe-Account (or none) than its own: each is a
	// row that would look missing_externally. Must be 0.
	WrongAccountRequests int64 `json:"wrong_account_requests"`
}

// AccountReport is one account's line of the scorecard: its rows, its
// sweep job's cycle, and its drift (every kind together: injected,
// detected, repaired, left for review, missed).
type AccountReport struct {
	// Account is "" for the platform's own rows.
	Account string `json:"account"`
	// Job is the account's sweep job (payrecon.AccountJob).
	Job  string `json:"job"`
	Rows int    `json:"rows"`
	// Swept counts the rows its job's completed cycle swept; Completed
	// says it completed one.
	Swept         int  `json:"swept"`
	Completed     bool `json:"completed"`
	Injected      int  `json:"injected"`
	Detected      int  `json:"detected"`
	Repaired      int  `json:"repaired"`
	LeftForReview int  `json:"left_for_review"`
	Missed        int  `json:"missed"`
}

func (p *PlatformReport) problems() []string {
	if p == nil {
		return nil
	}
	var out []string
	if p.WrongAccountRequests > 0 {
		out = append(out, fmt.Sprintf("%d requests made under the wrong Stripe-Account", p.WrongAccountRequests))
	}
	for _, a := range p.Accounts {
		name := accountLabel(a.Account)
		switch {
		case !a.Completed:
			out = append(out, fmt.Sprintf("account %s: its sweep job %s completed no cycle", name, a.Job))
		case a.Injected == 0:
			out = append(out, fmt.Sprintf("account %s: no drift injected", name))
		}
	}
	return out
}

// accountLabel names an account in the report: "platform" for "".
func accountLabel(account string) string {
	if account == "" {
		return "platform"
	}
	return account
}

// addAccountColumn gives payments the account column and builds the index
// payrecon walks an account's rows by (as `payrecon migrate` does).
func (r *runner) addAccountColumn(ctx context.Context) error {
	if _, err := r.pool.Exec(ctx, queries.Get("add_account_column")); err != nil {
		return fmt.Errorf("add the demo's account column: %w", err)
	}
	col, err := postgres.DetectAccountColumn(ctx, r.pool, postgres.AccountColumnDefault)
	if err != nil {
		return err
	}
	if !col.Found {
		return fmt.Errorf("the demo's account column is not used: %s", col.Problem)
	}
	if _, err := postgres.EnsureAccountIndex(ctx, r.pool, col); err != nil {
		return err
	}
	r.accounts = col
	r.rep.Platform = &PlatformReport{AccountColumn: col.Column, Accounts: []AccountReport{}}
	return nil
}

// secrets are the webhook endpoint's signing secrets: the account
// endpoint's, and on a platform its Connect endpoint's beside it.
func (r *runner) secrets() []string {
	if s := r.connectSecret(); s != "" {
		return []string{r.secret, s}
	}
	return []string{r.secret}
}

// connectSecret is the Connect endpoint's signing secret ("" without
// Config.Accounts).
func (r *runner) connectSecret() string {
	if !r.accounts.Found {
		return ""
	}
	return fmt.Sprintf("whsec_payrecon_demo_connect_%d", r.cfg.Seed)
}

// accountJobs are the LIKE arguments of the accounts' sweep jobs.
func accountJobs() pgx.StrictNamedArgs {
	base := sweep.DefaultJob
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return pgx.StrictNamedArgs{"base": base, "prefix": esc.Replace(base + "/" + payrecon.AccountPrefix)}
}

// watchAccounts reports the accounts' sweeps to progress (as the single
// sweep's callback would) from their cursors, until every account's job
// has completed a cycle: then the batch report says Wrapped, with the
// rows every cycle swept.
func (r *runner) watchAccounts(ctx context.Context, progress func(sweep.BatchReport, sweep.CycleReport)) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var completed, swept int
		err := r.pool.QueryRow(ctx, queries.Get("accounts_progress"), accountJobs()).Scan(&completed, &swept)
		switch {
		case err == nil:
			done := completed >= len(r.plan.accounts)
			progress(sweep.BatchReport{Wrapped: done}, sweep.CycleReport{Job: sweep.DefaultJob, Scanned: swept, Wrapped: done})
			if done {
				return
			}
		case ctx.Err() != nil:
			return
		default:
			r.log.Warn("could not read the accounts' sweeps", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// collectAccounts fills the per-account scorecard: detected and open are
// collect's subjects by kind, repaired the repaired rows by account.
func (r *runner) collectAccounts(ctx context.Context, detected, open map[payrecon.Kind]map[subject]bool, repaired map[int]int) error {
	pr := r.rep.Platform
	if pr == nil {
		return nil
	}
	orphans := make(map[string]int, len(r.plan.orphans))
	for _, o := range r.plan.orphans {
		orphans[o.intentID] = o.account
	}
	accountOf := func(s subject) int {
		if s.intent != "" {
			return orphans[s.intent]
		}
		return r.plan.rows[r.byID[s.payment]].account
	}
	lines := make([]AccountReport, len(r.plan.accounts))
	for a, acct := range r.plan.accounts {
		lines[a] = AccountReport{Account: acct, Job: payrecon.AccountJob(sweep.DefaultJob, acct), Repaired: repaired[a]}
	}
	for i, row := range r.plan.rows {
		l := &lines[row.account]
		l.Rows++
		if row.kind() != "" {
			l.Injected++
		}
		if r.plan.settlementKind(i) != "" {
			l.Injected++
		}
	}
	for _, o := range r.plan.orphans {
		lines[o.account].Injected++ // missing_locally
		if o.settlementKind() != "" {
			lines[o.account].Injected++
		}
	}
	for _, subjects := range detected {
		for s := range subjects {
			lines[accountOf(s)].Detected++
		}
	}
	for _, subjects := range open {
		for s := range subjects {
			lines[accountOf(s)].LeftForReview++
		}
	}
	res, err := r.pool.Query(ctx, queries.Get("account_cycles"), accountJobs())
	if err != nil {
		return fmt.Errorf("read the accounts' cycles: %w", err)
	}
	var (
		job       string
		swept     int
		completed bool
	)
	byJob := make(map[string]*AccountReport, len(lines))
	for a := range lines {
		byJob[lines[a].Job] = &lines[a]
	}
	if _, err := pgx.ForEachRow(res, []any{&job, &swept, &completed}, func() error {
		if l, ok := byJob[job]; ok {
			l.Swept, l.Completed = swept, completed
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read the accounts' cycles: %w", err)
	}
	for a := range lines {
		lines[a].Missed = lines[a].Injected - lines[a].Detected
	}
	pr.Accounts = lines
	return nil
}
