package main

import (
	"errors"
	"fmt"
	"sync"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/service"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// scanAccountsAtOnce is how many accounts `scan --once` sweeps at a time.
const scanAccountsAtOnce = 4

// accountsReport is `scan --once` on a platform: one cycle per account.
type accountsReport struct {
	Accounts []sweep.CycleReport `json:"accounts"`
	Total    sweep.CycleReport   `json:"total"`
}

// runAccounts sweeps every account's job (or --account's) until each has
// wrapped: each with its own store, cursor, lease and Stripe-Account, its
// own budget (--rps) within the platform's (--platform-rps), a few at a
// time, with one progress bar for the whole.
func (c *scanCmd) runAccounts(a *app, pool *pgxpool.Pool, store *postgres.Store, gw *stripeapi.Gateway, cfg sweep.Config, col postgres.AccountColumn) error {
	var accounts []string
	switch {
	case c.Account != "":
		acct, err := accountArg(c.Account)
		if err != nil {
			return err
		}
		accounts = []string{acct}
	default:
		var err error
		if accounts, err = postgres.ListAccounts(a.ctx, pool, col); err != nil {
			return err
		}
	}
	platformBudget := budget.NewLimiter(c.PlatformRPS)
	base := cfg.Job
	prog := a.newAccountsProgress(pool, store, col, base, accounts)
	reports := make([]sweep.CycleReport, len(accounts))
	g, ctx := errgroup.WithContext(a.ctx)
	g.SetLimit(scanAccountsAtOnce)
	for i, acct := range accounts {
		g.Go(func() error {
			lim := budget.NewLimiter(c.RPS).Within(platformBudget)
			ac := cfg
			ac.Job = payrecon.AccountJob(base, acct)
			// The same constructor as run's sweep (service.New).
			s, err := service.NewSweeper(store.ForAccount(col, acct), gw.ForAccount(acct, lim.OnRateLimited), ac,
				service.Parts{Limiter: lim, Logger: a.logger.With("job", ac.Job), LeaseFunc: ac.LeaseFunc})
			if err != nil {
				return err
			}
			rep, err := s.RunCycle(ctx, prog.update)
			reports[i] = rep
			if err != nil {
				return fmt.Errorf("account job %s: %w", ac.Job, err)
			}
			return nil
		})
	}
	err := g.Wait()
	prog.done()
	if err != nil {
		if errors.Is(err, payrecon.ErrLeaseHeld) {
			return fmt.Errorf("%w: wait for it with --wait, or stop the other sweeper", err)
		}
		return err
	}
	out := accountsReport{Accounts: reports, Total: sweep.CycleReport{Job: base, Counts: map[payrecon.Verdict]int{}, Wrapped: true}}
	for _, r := range reports {
		out.Total.Add(r)
	}
	if c.JSON {
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(a.stdout, "%d accounts swept\n", len(reports))
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "job\trows\tverified\tnew findings\tresolved\tStripe requests\tstill unverifiable\t\n")
		for _, r := range reports {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Job, r.Scanned, r.Verified, r.NewFindings, r.Resolved, r.StripeCalls, r.StillUnverifiable)
		}
		_ = tw.Flush()
		printCycle(a, out.Total, c.mode())
	}
	if out.Total.StillUnverifiable > 0 {
		return incompleteError{fmt.Errorf("%d rows could not be verified (Stripe unavailable for them); they stay queued for recheck", out.Total.StillUnverifiable)}
	}
	return nil
}

// newAccountsProgress is one progress bar for every account's cycle.
func (a *app) newAccountsProgress(pool *pgxpool.Pool, store *postgres.Store, col postgres.AccountColumn, base string, accounts []string) *lockedProgress {
	pr := a.newProgress(pool, "")
	var total int64
	for _, acct := range accounts {
		n, _ := store.ForAccount(col, acct).RowsAhead(a.ctx, payrecon.AccountJob(base, acct))
		total += n
	}
	pr.total = total
	if pr.bar != nil {
		pr.bar.SetTotal(total, false)
	}
	return &lockedProgress{p: pr}
}

// lockedProgress serialises the progress of accounts swept at once.
type lockedProgress struct {
	mu sync.Mutex
	p  *progress
}

func (l *lockedProgress) update(b sweep.BatchReport, total sweep.CycleReport) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.update(b, total)
}

func (l *lockedProgress) done() { l.p.done() }

// accountArg parses --account: an account id, or "platform" for the
// platform's own rows ("").
func accountArg(s string) (string, error) {
	if s == "platform" {
		return "", nil
	}
	if !payrecon.ValidAccountID(s) {
		return "", usageError{fmt.Errorf("--account %q is not an account id (acct_…, or platform)", s)}
	}
	return s, nil
}
