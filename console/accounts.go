package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/readmodel"
)

// AccountsReader is what the accounts pages read on a platform on Connect
// (--account-column): each connected account's sweep job, its lag, cycle,
// cursor and findings. postgres.ConsoleAccounts implements it, on the same
// readers as `payrecon status` and `findings list --account`.
type AccountsReader interface {
	// Summary is the overview's: how many accounts, how many behind, the
	// worst by lag.
	Summary(ctx context.Context, now time.Time) (AccountsSummary, error)
	// Accounts returns a page of accounts in account order (the platform's
	// own first), those after the account after ("" the first page; the
	// platform's own is named "platform" there), and whether more follow.
	Accounts(ctx context.Context, now time.Time, after string, limit int) ([]AccountLine, bool, error)
	// Account returns one account ("" the platform's own);
	// payrecon.ErrNotFound when it has no sweep job.
	Account(ctx context.Context, now time.Time, account string) (AccountDetail, error)
}

// The accounts pages' read models are package readmodel's.
type (
	AccountsSummary  = readmodel.AccountsSummary
	AccountLine      = readmodel.AccountLine
	AccountDetail    = readmodel.AccountDetail
	AccountKindCount = readmodel.AccountKindCount
	AccountFinding   = readmodel.AccountFinding
	AccountEvents    = readmodel.AccountEvents
)

// AccountFindingsShown is how many open findings an account's page lists.
const AccountFindingsShown = readmodel.AccountFindingsShown

// accountsPageSize is the Accounts page's page size.
const accountsPageSize = 50

// parseAccount reads an account named in a URL: "platform" or acct_….
func parseAccount(s string) (string, bool) {
	if s == "platform" {
		return "", true
	}
	return s, payrecon.ValidAccountID(s)
}

// checkAccountFilter refuses the findings list's account filter on a
// console of one account.
func (c *Console) checkAccountFilter(f filter) error {
	if f.Query.Account != nil && c.cfg.Accounts == nil {
		return badRequest("account %s: payments has no account column (--account-column)", payrecon.Quote(f.Account, 40))
	}
	return nil
}

// accountsData is the Accounts page.
type accountsData struct {
	Off      bool
	Summary  AccountsSummary
	Accounts []AccountLine
	// Next continues after the last account shown ("" on the last page).
	Next string
}

func (c *Console) handleAccounts(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	d := &accountsData{Off: c.cfg.Accounts == nil}
	p.Title, p.Nav, p.Data = "Accounts", "accounts", d
	if d.Off {
		return "accounts", http.StatusOK, nil
	}
	after := r.URL.Query().Get("after")
	if after != "" {
		if _, ok := parseAccount(after); !ok {
			return "", 0, badRequest("after: want acct_… or platform")
		}
	}
	limit := accountsPageSize
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return "", 0, badRequest("limit: want 1 to 500")
		}
		limit = n
	}
	now := c.clock.Now()
	var err error
	if d.Summary, err = c.cfg.Accounts.Summary(r.Context(), now); err != nil {
		return "", 0, err
	}
	lines, more, err := c.cfg.Accounts.Accounts(r.Context(), now, after, limit)
	if err != nil {
		return "", 0, err
	}
	d.Accounts = lines
	if more && len(lines) > 0 {
		d.Next = lines[len(lines)-1].Name()
	}
	return "accounts", http.StatusOK, nil
}

func (c *Console) handleAccount(w http.ResponseWriter, r *http.Request, p *page) (string, int, error) {
	if c.cfg.Accounts == nil {
		return "", 0, statusError{http.StatusNotFound, "payments has no account column: one account, the platform's (see --account-column)"}
	}
	name := r.PathValue("account")
	acct, ok := parseAccount(name)
	if !ok {
		return "", 0, statusError{http.StatusNotFound, fmt.Sprintf("%s is not an account (acct_…, or platform)", payrecon.Quote(name, 40))}
	}
	d, err := c.cfg.Accounts.Account(r.Context(), c.clock.Now(), acct)
	if errors.Is(err, payrecon.ErrNotFound) {
		return "", 0, statusError{http.StatusNotFound, fmt.Sprintf("account %s has no sweep job yet: it is swept within a minute of its first row", name)}
	}
	if err != nil {
		return "", 0, err
	}
	p.Title, p.Nav, p.Data = "Account "+name, "accounts", &d
	return "account", http.StatusOK, nil
}
