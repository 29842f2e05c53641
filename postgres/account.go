package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
)

// AccountColumnDefault is the column of payments that holds each row's
// connected account (--account-column).
const AccountColumnDefault = "stripe_account_id"

// AccountColumn says whether payments has the connected-account column
// (Connect): detected at start like the money columns, never added by
// payrecon. Absent means one account, the platform's.
type AccountColumn struct {
	// Column is the name asked for.
	Column string `json:"column"`
	// Found is true when payments has it with a text type.
	Found bool `json:"found"`
	// Problem says why it is not used.
	Problem string `json:"problem,omitempty"`
}

// DetectAccountColumn reads the catalogue for the account column. It
// changes nothing.
func DetectAccountColumn(ctx context.Context, pool *pgxpool.Pool, column string) (AccountColumn, error) {
	a := AccountColumn{Column: column}
	if column == "" {
		a.Problem = "turned off (empty column name)"
		return a, nil
	}
	rows, err := pool.Query(ctx, queries.Get("payments_columns"))
	if err != nil {
		return a, fmt.Errorf("read the columns of payments: %w", err)
	}
	var (
		name, declared, typ string
		updatable           bool
		found               string
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &declared, &typ, &updatable}, func() error {
		if name == column {
			found = typ
		}
		return nil
	}); err != nil {
		return a, fmt.Errorf("read the columns of payments: %w", err)
	}
	switch {
	case found == "":
		a.Problem = fmt.Sprintf("payments has no column %q: one account, the platform's", column)
	case !slices.Contains(moneyCurrencyTypes, found):
		a.Problem = fmt.Sprintf("column %q is %s, not text", column, found)
	default:
		a.Found = true
	}
	return a, nil
}

// accountExpr is a row's account as payrecon compares it: the column as
// text, NULL as "" (the platform). The index payments_account_id is built
// on exactly this expression, so the account's walk in id order is an
// index range.
func (a AccountColumn) accountExpr(alias string) string {
	col := pgx.Identifier{a.Column}.Sanitize()
	if alias != "" {
		col = alias + "." + col
	}
	return "coalesce(" + col + "::text, '')"
}

// accountMarker is the placeholder of the account filter in the read
// queries: `true /*account:pay*/` keeps every row until accountSQL makes it
// `coalesce(pay."stripe_account_id"::text, ”) = @account::text`; and
// `”::text /*account_of:pay*/` (a row's account) reads as "" until it is the
// expression itself.
var accountMarker = regexp.MustCompile(`(true|''::text) /\*(account|account_of):([a-z]+)\*/`)

// accountSQL puts the account column into query q (a quoted identifier of
// a column the catalogue named).
func accountSQL(q string, a AccountColumn) string {
	if !a.Found {
		return q
	}
	return accountMarker.ReplaceAllStringFunc(q, func(s string) string {
		g := accountMarker.FindStringSubmatch(s)
		if g[2] == "account" {
			return a.accountExpr(g[3]) + " = @account::text"
		}
		return a.accountExpr(g[3])
	})
}

// storeReads are the queries a store rewrites for its money, account and
// session columns.
var storeReads = []string{"read_batch", "read_recent_batch", "read_rechecks", "sweep_row", "count_created_between", "commit_checks", "rows_ahead"}

// ForAccount returns a store on the same pool (with the same EnqueueFunc and
// money columns) whose batches read, count and verify only the rows of one
// account: account "" is the platform's (NULL or empty in the column). Give
// it the account's own job (payrecon.AccountJob): its cursor, rechecks and
// lease are then its own. A row moved to another account while it was
// checked is not verified under this one.
func (s *Store) ForAccount(col AccountColumn, account string) *Store {
	r := *s
	if col.Found {
		r.accounts, r.account = &col, account
	}
	r.rebuild()
	return &r
}

// rebuild rewrites the store's queries for its money and account columns.
func (s *Store) rebuild() {
	s.reads = map[string]string{}
	for _, name := range storeReads {
		q := queries.Get(name)
		if s.money != nil {
			q = moneySQL(q, *s.money)
		}
		if s.accounts != nil {
			q = accountSQL(q, *s.accounts)
		}
		if s.sessions != nil {
			q = sessionSQL(q, *s.sessions)
		}
		s.reads[name] = q
	}
}

// scoped adds the store's account to args when its queries filter by one.
func (s *Store) scoped(args pgx.StrictNamedArgs) pgx.StrictNamedArgs {
	if s.accounts != nil {
		args["account"] = s.account
	}
	return args
}

// Account returns the account the store's batches read, and whether it
// reads only one account's rows.
func (s *Store) Account() (string, bool) { return s.account, s.accounts != nil }

// EnsureAccountIndex builds, CONCURRENTLY, the index an account's sweep
// walks (its rows in id order) when payments is a plain table with the
// account column; on a view it does nothing (index the table under it).
// It returns whether it built one.
func EnsureAccountIndex(ctx context.Context, pool *pgxpool.Pool, col AccountColumn) (bool, error) {
	if !col.Found {
		return false, nil
	}
	var table bool
	if err := pool.QueryRow(ctx, queries.Get("payments_is_table")).Scan(&table); err != nil {
		return false, fmt.Errorf("is payments a table: %w", err)
	}
	if !table {
		return false, nil
	}
	var valid *bool
	if err := pool.QueryRow(ctx, queries.Get("account_index_state")).Scan(&valid); err != nil {
		return false, fmt.Errorf("look for the account index: %w", err)
	}
	if valid != nil && *valid {
		return false, nil
	}
	if valid != nil { // INVALID: an interrupted build
		if _, err := pool.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS payments_account_id"); err != nil {
			return false, fmt.Errorf("drop the invalid account index: %w", err)
		}
	}
	ddl := "CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_account_id ON payments ((" + col.accountExpr("") + "), id)"
	if _, err := pool.Exec(ctx, ddl); err != nil {
		return false, fmt.Errorf("build the account index payments_account_id: %w", err)
	}
	return true, nil
}

// ListAccounts returns every account payments has rows of, "" (the
// platform) among them when it has rows with the column NULL or empty, in
// order: a loose index scan, one probe per account.
func ListAccounts(ctx context.Context, pool *pgxpool.Pool, col AccountColumn) ([]string, error) {
	if !col.Found {
		return []string{""}, nil
	}
	rows, err := pool.Query(ctx, accountSQL(queries.Get("accounts"), col))
	if err != nil {
		return nil, fmt.Errorf("list the accounts of payments: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list the accounts of payments: %w", err)
	}
	return out, nil
}

// paymentAccount returns the payment of a PaymentIntent, its status and
// the account its row records (found false when there is none).
func paymentAccount(ctx context.Context, tx pgx.Tx, col AccountColumn, intentID string) (id int64, status, account string, found bool, err error) {
	err = tx.QueryRow(ctx, accountSQL(queries.Get("payment_account_by_intent"), col), pgx.StrictNamedArgs{"intent_id": intentID}).Scan(&id, &status, &account)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", "", false, nil
	}
	if err != nil {
		return 0, "", "", false, fmt.Errorf("read the account of %s's payment: %w", intentID, err)
	}
	return id, status, account, true, nil
}

// checkEventAccount opens an account_mismatch finding, and reports true,
// when ev came from another account than the one its payment's row
// records: such an event is never applied (a direct charge of account A
// is never acted on from account B's events, nor from the platform's).
func (e *Events) checkEventAccount(ctx context.Context, tx pgx.Tx, ev payrecon.Event, now time.Time, res *payrecon.EventResult) (bool, error) {
	if !e.Accounts.Found || ev.IntentID() == "" {
		return false, nil
	}
	id, status, account, found, err := paymentAccount(ctx, tx, e.Accounts, ev.IntentID())
	if err != nil || !found || account == ev.Account {
		return false, err
	}
	return true, e.accountMismatch(ctx, tx, ev, id, status, account, ev.IntentID(), now, res)
}

// accountMismatch records that ev came from another account than the one
// payment id's row records: outcome account_mismatch, and an
// account_mismatch finding (needs_review) unless that kind is ignored.
// intentID is the PaymentIntent the row records ("" for a session row).
func (e *Events) accountMismatch(ctx context.Context, tx pgx.Tx, ev payrecon.Event, id int64, status, account, intentID string, now time.Time, res *payrecon.EventResult) error {
	res.PaymentID, res.Outcome = id, payrecon.OutcomeAccountMismatch
	if e.Ignore[payrecon.KindAccountMismatch] {
		return nil
	}
	reason := fmt.Sprintf("event %s (%s) came from %s, but the payment's row records %s: not applied",
		ev.ID, ev.Type, accountName(ev.Account), accountName(account))
	rows, err := tx.Query(ctx, queries.Get("open_drifts"), pgx.StrictNamedArgs{
		"payment_id": id, "intent_id": intentID, "local_status": status,
		"drifts":  []payrecon.Drift{{Kind: payrecon.KindAccountMismatch, Reason: reason}},
		"verdict": string(payrecon.NeedsReview), "job": "webhook", "details": nil, "now": now,
	})
	if err != nil {
		return fmt.Errorf("open account_mismatch for event %s: %w", ev.ID, err)
	}
	var (
		fid  int64
		kind string
	)
	if _, err := pgx.ForEachRow(rows, []any{&fid, &kind}, func() error {
		res.FindingID = fid
		return nil
	}); err != nil {
		return fmt.Errorf("open account_mismatch for event %s: %w", ev.ID, err)
	}
	return nil
}

// accountName is an account as findings name it: "the platform" for "".
func accountName(account string) string {
	if account == "" {
		return "the platform's own account"
	}
	return account
}
