package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// MoneyColumns says which local money columns of payments payrecon reads:
// an amount (integer, minor units) and a currency. Both are optional:
// payrecon never adds them, and an absent or unusable column switches its
// check off (Problem says why).
type MoneyColumns struct {
	// AmountColumn and CurrencyColumn are the names asked for
	// (--amount-column, --currency-column).
	AmountColumn   string `json:"amount_column"`
	CurrencyColumn string `json:"currency_column"`
	// Amount and Currency are true when payments has the column with a
	// usable type: the check is on.
	Amount   bool `json:"amount"`
	Currency bool `json:"currency"`
	// AmountProblem and CurrencyProblem say why a check is off.
	AmountProblem   string `json:"amount_problem,omitempty"`
	CurrencyProblem string `json:"currency_problem,omitempty"`
}

// Checks returns the sweep's money checks for these columns, ignoring the
// given kinds.
func (m MoneyColumns) Checks(ignore map[payrecon.Kind]bool) payrecon.MoneyChecks {
	return payrecon.MoneyChecks{Amount: m.Amount, Currency: m.Currency, Ignore: ignore}
}

// Base types the money columns may have (format_type names of the base type,
// a domain's underlying type).
var (
	moneyAmountTypes   = []string{"bigint", "integer", "smallint"}
	moneyCurrencyTypes = []string{"text", "character varying", "character"}
)

// DetectMoneyColumns reads the catalogue (the relation search_path finds as
// payments, which may be a view) for the two money columns. It changes
// nothing.
func DetectMoneyColumns(ctx context.Context, pool *pgxpool.Pool, amountColumn, currencyColumn string) (MoneyColumns, error) {
	m := MoneyColumns{AmountColumn: amountColumn, CurrencyColumn: currencyColumn}
	rows, err := pool.Query(ctx, queries.Get("payments_columns"))
	if err != nil {
		return m, fmt.Errorf("read the columns of payments: %w", err)
	}
	base := map[string]string{}
	var (
		name, declared, typ string
		updatable           bool
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &declared, &typ, &updatable}, func() error {
		base[name] = typ
		return nil
	}); err != nil {
		return m, fmt.Errorf("read the columns of payments: %w", err)
	}
	judge := func(col string, types []string, want string) (bool, string) {
		if col == "" {
			return false, "turned off (empty column name)"
		}
		t, ok := base[col]
		switch {
		case !ok:
			return false, fmt.Sprintf("payments has no column %q", col)
		case !slices.Contains(types, t):
			return false, fmt.Sprintf("column %q is %s, not %s", col, t, want)
		}
		return true, ""
	}
	m.Amount, m.AmountProblem = judge(amountColumn, moneyAmountTypes, "an integer (minor units)")
	m.Currency, m.CurrencyProblem = judge(currencyColumn, moneyCurrencyTypes, "text")
	return m, nil
}

// moneyMarker is the placeholder of a money column in the read queries:
// `NULL::bigint /*amount:pay*/` reads as NULL until moneySQL replaces it
// with the column (pay."amount"::bigint).
var moneyMarker = regexp.MustCompile(`NULL::(bigint|text) /\*(amount|currency):([a-z]+)\*/`)

// moneySQL puts the money columns m has into query q, as quoted
// identifiers (pgx.Identifier) of columns the catalogue named: never pasted
// from input unquoted.
func moneySQL(q string, m MoneyColumns) string {
	return moneyMarker.ReplaceAllStringFunc(q, func(s string) string {
		g := moneyMarker.FindStringSubmatch(s)
		typ, which, alias := g[1], g[2], g[3]
		switch {
		case which == "amount" && m.Amount:
			return alias + "." + pgx.Identifier{m.AmountColumn}.Sanitize() + "::" + typ
		case which == "currency" && m.Currency:
			return alias + "." + pgx.Identifier{m.CurrencyColumn}.Sanitize() + "::" + typ
		}
		return s
	})
}

// WithMoneyColumns returns a store on the same pool that reads the money
// columns m found (DetectMoneyColumns) with every row: the sweep then
// compares them. Rows read by a store without them carry no money, and
// their amount and currency are not judged.
func (s *Store) WithMoneyColumns(m MoneyColumns) *Store {
	r := *s
	r.money = &m
	r.rebuild()
	return &r
}

// MoneyColumns returns the money columns the store reads (zero when none).
func (s *Store) MoneyColumns() MoneyColumns {
	if s.money == nil {
		return MoneyColumns{}
	}
	return *s.money
}

// read returns a read query, with the money columns when the store has them.
func (s *Store) read(name string) string {
	if q, ok := s.reads[name]; ok {
		return q
	}
	return queries.Get(name)
}

// localMoney is the money of a row as read, or nil when the store reads no
// money columns.
func (s *Store) localMoney(amount *int64, currency *string) *payrecon.LocalMoney {
	if s.money == nil {
		return nil
	}
	m := &payrecon.LocalMoney{Amount: amount}
	if currency != nil {
		m.Currency = *currency
	}
	return m
}
