package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/digits"
	"github.com/payrecon/payrecon/postgres"
)

// moneyFlags configure the money checks and which findings are recorded
// (scan, run, config, status).
type moneyFlags struct {
	moneyColumnFlags
	ignoreFlags
	IntentMetadata string `name:"intent-metadata" placeholder:"KEY=VALUE" help:"Only listed PaymentIntents carrying this metadata are payrecon's: others (made by other systems in the same account) are never missing_locally."`
	accountColumnFlag
	sessionColumnFlag
}

// sessionColumnFlag names the column of Checkout Sessions (scan, run,
// config, status, doctor).
type sessionColumnFlag struct {
	SessionColumn string `name:"session-column" env:"PAYRECON_SESSION_COLUMN" default:"stripe_checkout_session_id" help:"The payments column holding each row's Checkout Session (cs_…). Present: a row with a session and no PaymentIntent id is checked through its session (and checkout.session.* webhooks apply to it). Absent: such rows are invalid_local_row. payrecon never adds it."`
}

// sessionColumn detects the session column and says once in the log
// whether session rows are checked.
func (a *app) sessionColumn(pool *pgxpool.Pool, f sessionColumnFlag) (postgres.SessionColumn, error) {
	col, err := postgres.DetectSessionColumn(a.ctx, pool, f.SessionColumn)
	if err != nil {
		return col, err
	}
	if col.Found {
		a.logger.Info("Checkout Sessions: rows with a session and no PaymentIntent are checked through the session", "session_column", col.Column)
	} else {
		a.logger.Debug("no session column", "session_column", f.SessionColumn, "why", col.Problem)
	}
	return col, nil
}

// accountColumnFlag names the column of connected accounts (Connect: scan,
// run, config, status, migrate, findings).
type accountColumnFlag struct {
	AccountColumn string `name:"account-column" env:"PAYRECON_ACCOUNT_COLUMN" default:"stripe_account_id" help:"The payments column holding each row's connected account (acct_…; NULL or empty: the platform's own). Present: every account is its own sweep job (<job>/<acct_…>), read with its Stripe-Account header. Absent: one account. payrecon never adds it (migrate indexes it)."`
}

// accountColumn detects the account column and says once in the log
// whether the platform's accounts are swept one by one.
func (a *app) accountColumn(pool *pgxpool.Pool, f accountColumnFlag) (postgres.AccountColumn, error) {
	col, err := postgres.DetectAccountColumn(a.ctx, pool, f.AccountColumn)
	if err != nil {
		return col, err
	}
	if col.Found {
		a.logger.Info("Connect: every account of the account column is its own sweep job", "account_column", col.Column)
	} else {
		a.logger.Debug("one account: no account column", "account_column", f.AccountColumn, "why", col.Problem)
	}
	return col, nil
}

// moneyColumnFlags name the local money columns (scan, run, config,
// status, payouts).
type moneyColumnFlags struct {
	AmountColumn   string `name:"amount-column" env:"PAYRECON_AMOUNT_COLUMN" default:"amount" help:"The payments column holding the amount in minor units (an integer), compared with Stripe's; absent: the amount check is off. payrecon never adds it."`
	CurrencyColumn string `name:"currency-column" env:"PAYRECON_CURRENCY_COLUMN" default:"currency" help:"The payments column holding the ISO currency code, compared case-insensitively with Stripe's; absent: the currency check is off. payrecon never adds it."`
}

// ignoreFlags name the kinds never recorded (scan, run, events, config,
// status).
type ignoreFlags struct {
	IgnoreKinds string `name:"ignore-kinds" env:"PAYRECON_IGNORE_KINDS" placeholder:"KINDS" help:"Finding kinds accepted as normal, comma-separated (e.g. partially_refunded): never recorded, by the sweep or by webhooks and events. An unknown kind is a configuration error."`
}

// ignore parses --ignore-kinds; an unknown kind is a usage error (exit 2).
func (f ignoreFlags) ignore() (map[payrecon.Kind]bool, error) {
	out := map[payrecon.Kind]bool{}
	for _, k := range splitList(f.IgnoreKinds) {
		if !slices.Contains(payrecon.Kinds, payrecon.Kind(k)) {
			return nil, usageError{fmt.Errorf("--ignore-kinds: %q is not a finding kind (kinds: %s)", k, kindList())}
		}
		out[payrecon.Kind(k)] = true
	}
	return out, nil
}

// metadata parses --intent-metadata KEY=VALUE ("" when unset).
func (f moneyFlags) metadata() (map[string]string, error) {
	if f.IntentMetadata == "" {
		return nil, nil
	}
	k, v, ok := strings.Cut(f.IntentMetadata, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return nil, usageError{fmt.Errorf("--intent-metadata %q: want KEY=VALUE", f.IntentMetadata)}
	}
	return map[string]string{strings.TrimSpace(k): v}, nil
}

// kindList names every finding kind, for errors and help texts (the
// ${kinds} of flag tags).
func kindList() string {
	s := make([]string, len(payrecon.Kinds))
	for i, k := range payrecon.Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// ignoredList is --ignore-kinds as shown by config and status.
func ignoredList(ignore map[payrecon.Kind]bool) string {
	var out []string
	for _, k := range payrecon.Kinds {
		if ignore[k] {
			out = append(out, string(k))
		}
	}
	if len(out) == 0 {
		return "(none)"
	}
	return strings.Join(out, ",")
}

// moneyColumns detects the money columns at start and says once in the log
// which checks are off and why.
func (a *app) moneyColumns(pool *pgxpool.Pool, f moneyColumnFlags) (postgres.MoneyColumns, error) {
	cols, err := postgres.DetectMoneyColumns(a.ctx, pool, f.AmountColumn, f.CurrencyColumn)
	if err != nil {
		return cols, err
	}
	if !cols.Amount {
		a.logger.Info("amount check off: amount_mismatch is not judged", "amount_column", f.AmountColumn, "why", cols.AmountProblem)
	}
	if !cols.Currency {
		a.logger.Info("currency check off: currency_mismatch is not judged", "currency_column", f.CurrencyColumn, "why", cols.CurrencyProblem)
	}
	return cols, nil
}

// describeMoney says which money column is used, or why not.
func describeMoney(col string, on bool, problem string) string {
	if on {
		return col + " (on)"
	}
	return fmt.Sprintf("%s (off: %s)", col, problem)
}

// describeStripeMoney says in a line what Stripe said about the money when
// a finding was recorded: "5,000 JPY captured, 5,000 refunded (seen
// 2026-11-30 10:00 UTC); the intent asks 5,000, received 5,000".
func describeStripeMoney(d payrecon.FindingDetails) string {
	cur := strings.ToUpper(d.Currency)
	asked := fmt.Sprintf("the intent asks %s %s, received %s", thousands(d.Amount), cur, thousands(d.AmountReceived))
	c := d.Charge
	if c == nil {
		return asked + "; no charge"
	}
	ccur := strings.ToUpper(c.Currency)
	s := fmt.Sprintf("%s %s captured", thousands(c.AmountCaptured), ccur)
	if c.AmountRefunded > 0 {
		s += fmt.Sprintf(", %s refunded", thousands(c.AmountRefunded))
		if c.Refunded {
			s += " (fully)"
		}
	}
	if c.Disputed {
		s += ", disputed"
	}
	s += fmt.Sprintf(" on charge %s, seen %s; %s", c.ID, c.ObservedAt.UTC().Format("2006-01-02 15:04 MST"), asked)
	return s
}

// describeLocalMoney says what the row held when the finding was recorded.
func describeLocalMoney(d payrecon.FindingDetails) string {
	amount := "NULL"
	if d.LocalAmount != nil {
		amount = thousands(*d.LocalAmount)
	}
	return fmt.Sprintf("%s %s", amount, orDefault(strings.ToUpper(d.LocalCurrency), "(no currency)"))
}

// thousands writes n with comma separators: 5000 → "5,000".
func thousands(n int64) string { return digits.Group(n, ",") }
