package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/internal/redact"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
)

// payoutsCmd is `payrecon payouts`: the payouts check, and what it read.
type payoutsCmd struct {
	Check  payoutsCheckCmd  `cmd:"" default:"withargs" help:"Read Stripe's payouts and the lines of each automatic one, and judge the settlement of every payment: once with --once (the default command: payrecon payouts --once), else every --payouts-interval."`
	List   payoutsListCmd   `cmd:"" help:"The payouts read, newest first: amount, status, lines matched and unmatched, and each payout's own check."`
	Show   payoutsShowCmd   `cmd:"" help:"One payout: gross, refunds, disputes, fees, other, net; its lines, matched or not, each with its local order id."`
	Export payoutsExportCmd `cmd:"" help:"Write the lines of the payouts arriving between two dates as CSV (one line per balance transaction, with the local order id), streamed to stdout or --output."`
}

// settleAfterFlag is --settle-after (payouts, run).
type settleAfterFlag struct {
	SettleAfter retention `name:"settle-after" env:"PAYRECON_SETTLE_AFTER" default:"14d" help:"A payment paid locally and captured in Stripe whose charge is in no payout this long after it (with later payouts read) is paid_not_settled (days: 14d, or a duration; 0: never)."`
}

type payoutsCheckCmd struct {
	stripeFlags
	Once  bool      `help:"Read and judge once, print what was done, and exit."`
	Since retention `default:"90d" help:"How far back payouts are listed (by their creation): days (90d) or a duration."`
	payoutsIntervalFlag
	rpsFlag
	Wait bool `help:"When another process holds the payouts lease, wait for it instead of exiting with status 3."`
	JSON bool `help:"Print the summary as JSON."`
	settleAfterFlag
	moneyColumnFlags
	accountColumnFlag
	ignoreFlags
	leaseTimeoutFlag
}

func (c *payoutsCheckCmd) Run(a *app) error {
	if err := c.leaseTimeoutFlag.check(); err != nil {
		return err
	}
	switch {
	case time.Duration(c.Since) <= 0:
		return usageError{fmt.Errorf("--since must be positive (e.g. 90d)")}
	case c.RPS < 0:
		return usageError{fmt.Errorf("--rps must not be negative, got %g (0 means unlimited)", c.RPS)}
	case c.PayoutsInterval < 0:
		return usageError{fmt.Errorf("--payouts-interval must not be negative, got %s", c.PayoutsInterval)}
	case !c.Once && c.PayoutsInterval == 0:
		return usageError{fmt.Errorf("--payouts-interval 0 without --once does nothing: use --once, or a positive interval")}
	}
	ignore, err := c.ignore()
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
	a.logger.Info("configuration", "database_url", redact.URL(a.cli.DatabaseURL),
		"stripe_secret_key", redact.Secret(c.StripeSecretKey), "stripe_api_base", apiBaseShown(c.StripeAPIBase),
		"since", postgres.FormatRetention(time.Duration(c.Since)), "settle_after", postgres.FormatRetention(time.Duration(c.SettleAfter)),
		"rps", c.RPS, "payouts_interval", c.PayoutsInterval, "ignore_kinds", ignoredList(ignore))
	cols, err := a.moneyColumns(pool, c.moneyColumnFlags)
	if err != nil {
		return err
	}
	accounts, err := a.accountColumn(pool, c.accountColumnFlag)
	if err != nil {
		return err
	}
	store := postgres.NewPayouts(pool).WithAccountColumn(accounts)
	if cols.Amount || cols.Currency {
		store = store.WithMoneyColumns(cols)
	}
	rec := settlement.New(gw, store, settlement.Config{
		Since:   time.Duration(c.Since),
		Checks:  payrecon.SettlementChecks{Amount: cols.Amount, Currency: cols.Currency, Ignore: ignore, SettleAfter: time.Duration(c.SettleAfter)},
		Limiter: limiter, Logger: a.logger.With("component", "payouts"),
		LeaseFunc: leaseFunc(pool, c.LeaseTimeout), WaitForLease: c.Wait || !c.Once,
	})
	if !c.Once {
		a.logger.Info("reading payouts continuously; stop with Ctrl-C", "interval", c.PayoutsInterval)
		for {
			rep, err := rec.RunOnce(a.ctx)
			switch {
			case a.ctx.Err() != nil:
				return nil
			case errors.Is(err, payrecon.ErrConfig):
				return err
			case err != nil:
				a.logger.Warn("payouts round failed; trying again next round", "error", err, "next_in", c.PayoutsInterval)
			default:
				a.logger.Info("payouts round", "summary", rep.Describe(), "duration", rep.Duration.Round(time.Millisecond))
			}
			if err := payrecon.Sleep(a.ctx, c.PayoutsInterval); err != nil {
				return nil
			}
		}
	}
	rep, err := rec.RunOnce(a.ctx)
	if err != nil {
		if errors.Is(err, payrecon.ErrLeaseHeld) {
			return fmt.Errorf("%w: wait for it with --wait, or stop the other payouts check", err)
		}
		return err
	}
	flagged, err := flaggedPayouts(a.ctx, store)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(struct {
			settlement.Report
			Flagged []payrecon.PayoutSummary `json:"flagged_payouts"`
		}{rep, flagged})
	}
	printPayoutsRound(a, rep, flagged)
	return nil
}

// flaggedPayouts are the payouts of the latest pages whose own check
// failed.
func flaggedPayouts(ctx context.Context, store *postgres.Payouts) ([]payrecon.PayoutSummary, error) {
	out := []payrecon.PayoutSummary{}
	all, err := store.List(ctx, payrecon.PayoutFilter{Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if len(p.Problems) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

func printPayoutsRound(a *app, rep settlement.Report, flagged []payrecon.PayoutSummary) {
	fmt.Fprintf(a.stdout, "payouts of %s since %s: read in %s\n", accountLabel(rep.Account), rep.Since.UTC().Format(time.DateOnly),
		payrecon.FormatDuration(rep.Duration))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "payouts listed\t%s\t\n", thousands(int64(rep.Payouts)))
	fmt.Fprintf(tw, "  automatic\t%s\t\n", thousands(int64(rep.Automatic)))
	fmt.Fprintf(tw, "  manual (%s)\t%s\t\n", payrecon.ManualPayoutNote, thousands(int64(rep.Manual)))
	fmt.Fprintf(tw, "lines read now\t%s\t(%s payouts, %s lines new)\n", thousands(int64(rep.Lines)), thousands(int64(rep.Read)), thousands(int64(rep.NewLines)))
	fmt.Fprintf(tw, "already read in full\t%s\t\n", thousands(int64(rep.AlreadyRead)))
	fmt.Fprintf(tw, "awaiting Stripe's reconciliation\t%s\t\n", thousands(int64(rep.NotReconciled)))
	fmt.Fprintf(tw, "PaymentIntents judged\t%s\t\n", thousands(int64(rep.Judged)))
	for _, k := range payrecon.SettlementKinds {
		if n, m := rep.Opened[k], rep.Healed[k]; n > 0 || m > 0 {
			fmt.Fprintf(tw, "  %s\t%d opened, %d healed\t\n", k, n, m)
		}
	}
	fmt.Fprintf(tw, "Stripe requests\t%s\t\n", thousands(int64(rep.Requests)))
	_ = tw.Flush()
	for _, p := range flagged {
		fmt.Fprintf(a.stdout, "FLAGGED: payout %s (%s %s, %s): %s\n", p.ID, money(p.Amount, p.Currency), p.Status,
			arrival(p.ArrivalDate), problemList(p.Problems))
	}
}

func problemList(ps []payrecon.PayoutProblem) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// money renders an amount in minor units with its currency: 12345 usd.
func money(amount int64, currency string) string {
	return thousands(amount) + " " + strings.ToUpper(currency)
}

func arrival(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return "arrives " + t.UTC().Format(time.DateOnly)
}

// accountFlag selects one account's payouts (list, export).
type accountFlag struct {
	Account string `placeholder:"ACCT" help:"Only this account's payouts: acct_… for a connected account, platform for the platform's own; all by default."`
}

func (f accountFlag) filter() (*string, error) {
	switch {
	case f.Account == "":
		return nil, nil
	case f.Account == "platform":
		s := ""
		return &s, nil
	case strings.HasPrefix(f.Account, "acct_") && len(f.Account) <= 255 && !strings.ContainsAny(f.Account, " \t\r\n"):
		return &f.Account, nil
	}
	return nil, usageError{fmt.Errorf("--account %s: want acct_… or platform", payrecon.Quote(f.Account, 40))}
}

type payoutsListCmd struct {
	accountFlag
	Limit int  `default:"50" help:"At most this many, newest first."`
	JSON  bool `help:"Print JSON."`
}

func (c *payoutsListCmd) Run(a *app) error {
	if err := checkPositiveInt("--limit", c.Limit); err != nil {
		return err
	}
	acct, err := c.filter()
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	ps, err := postgres.NewPayouts(pool).List(a.ctx, payrecon.PayoutFilter{Account: acct, Limit: c.Limit})
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(ps)
	}
	if len(ps) == 0 {
		fmt.Fprintln(a.stdout, "no payouts read yet: run payrecon payouts --once")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PAYOUT\tCREATED\tARRIVAL\tSTATUS\tAMOUNT\tLINES\tMATCHED\tUNMATCHED\tCHECK")
	for _, p := range ps {
		lines := "—"
		if p.LinesRead {
			lines = thousands(int64(p.Totals.Lines))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", term(p.ID), p.Created.UTC().Format(time.DateOnly),
			dateOr(p.ArrivalDate), term(string(p.Status)), money(p.Amount, term(p.Currency)), lines, p.Matched, p.Unmatched, payoutCheck(p))
	}
	return tw.Flush()
}

// payoutCheck says how a payout's own check came out, in a few words.
func payoutCheck(p payrecon.PayoutSummary) string {
	switch {
	case len(p.Problems) > 0:
		return "FLAGGED: " + problemList(p.Problems)
	case p.Note != "":
		return p.Note
	case p.LinesRead:
		return "ok: lines add up"
	}
	return "lines not read yet"
}

func dateOr(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format(time.DateOnly)
}

type payoutsShowCmd struct {
	ID   string `arg:"" help:"Payout id (po_…)."`
	JSON bool   `help:"Print JSON."`
}

func (c *payoutsShowCmd) Run(a *app) error {
	if !strings.HasPrefix(c.ID, "po_") {
		return usageError{fmt.Errorf("%s is not a payout id (po_…)", payrecon.Quote(c.ID, 40))}
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	store := postgres.NewPayouts(pool)
	p, err := store.Get(a.ctx, c.ID)
	if err != nil {
		if errors.Is(err, payrecon.ErrNotFound) {
			return configError{err}
		}
		return err
	}
	var lines []payrecon.PayoutLineRow
	if err := store.Lines(a.ctx, payrecon.PayoutLinesQuery{PayoutID: c.ID}, func(r payrecon.PayoutLineRow) error {
		lines = append(lines, r)
		return nil
	}); err != nil {
		return err
	}
	if c.JSON {
		if lines == nil {
			lines = []payrecon.PayoutLineRow{}
		}
		return a.printJSON(struct {
			payrecon.PayoutSummary
			Lines []payrecon.PayoutLineRow `json:"lines"`
		}{p, lines})
	}
	cur := term(p.Currency)
	fmt.Fprintf(a.stdout, "payout %s of %s: %s, %s, created %s, %s\n", term(p.ID), accountLabel(p.Account), money(p.Amount, cur),
		term(string(p.Status)), p.Created.UTC().Format(time.DateOnly), arrival(p.ArrivalDate))
	auto := "automatic"
	if !p.Automatic {
		auto = "manual"
	}
	fmt.Fprintf(a.stdout, "%s, reconciliation %s; check: %s\n", auto, term(p.ReconciliationStatus), payoutCheck(p))
	if p.LinesRead {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		t := p.Totals
		for _, x := range []struct {
			name string
			v    int64
		}{{"gross", t.Gross}, {"refunds", t.Refunds}, {"disputes", t.Disputes}, {"fees", t.Fees}, {"other", t.Other}, {"net", t.Net}} {
			fmt.Fprintf(tw, "%s\t%s\t\n", x.name, money(x.v, cur))
		}
		fmt.Fprintf(tw, "payout amount\t%s\t\n", money(p.Amount, cur))
		_ = tw.Flush()
		fmt.Fprintf(a.stdout, "%d lines: %d matched to a local payment, %d name a PaymentIntent with no local payment\n",
			t.Lines, p.Matched, p.Unmatched)
	}
	if len(lines) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LINE\tTYPE\tCATEGORY\tGROSS\tFEE\tNET\tPAYMENT INTENT\tPAYMENT\tORDER\tMATCH")
	for _, l := range lines {
		pay := "—"
		if l.PaymentID != nil {
			pay = fmt.Sprint(*l.PaymentID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", term(l.ID), term(l.Type), term(l.ReportingCategory),
			thousands(l.Amount), thousands(l.Fee), thousands(l.Net), term(orDefault(l.IntentID, "—")), pay,
			term(orDefault(l.OrderID, "—")), l.Match)
	}
	return tw.Flush()
}

type payoutsExportCmd struct {
	From   string `required:"" placeholder:"DATE" help:"First arrival date, YYYY-MM-DD (UTC)."`
	To     string `required:"" placeholder:"DATE" help:"Last arrival date, YYYY-MM-DD (UTC), included."`
	Output string `short:"o" placeholder:"FILE" help:"Write the CSV to this file (created; nothing is left behind on failure) instead of stdout."`
	accountFlag
}

// exportRange parses --from and --to into [from, to+1 day).
func exportRange(from, to string) (time.Time, time.Time, error) {
	f, err := time.Parse(time.DateOnly, from)
	if err != nil {
		return time.Time{}, time.Time{}, usageError{fmt.Errorf("--from %s: want a date, YYYY-MM-DD", payrecon.Quote(from, 40))}
	}
	t, err := time.Parse(time.DateOnly, to)
	if err != nil {
		return time.Time{}, time.Time{}, usageError{fmt.Errorf("--to %s: want a date, YYYY-MM-DD", payrecon.Quote(to, 40))}
	}
	if t.Before(f) {
		return time.Time{}, time.Time{}, usageError{fmt.Errorf("--to %s is before --from %s", to, from)}
	}
	return f, t.AddDate(0, 0, 1), nil
}

func (c *payoutsExportCmd) Run(a *app) (err error) {
	from, to, err := exportRange(c.From, c.To)
	if err != nil {
		return err
	}
	acct, err := c.filter()
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	w := a.stdout
	if c.Output != "" {
		// Written beside the target and renamed into place when complete:
		// a failed export leaves no half-written file.
		f, err := os.CreateTemp(dirOf(c.Output), ".payrecon-export-*.csv")
		if err != nil {
			return configError{fmt.Errorf("--output: %w", err)}
		}
		defer func() {
			if err != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}()
		w = f
		defer func() {
			if err == nil {
				if err = f.Close(); err == nil {
					err = os.Rename(f.Name(), c.Output)
				}
				if err != nil {
					os.Remove(f.Name())
				}
			}
		}()
	}
	cw, err := console.NewPayoutCSV(w)
	if err != nil {
		return err
	}
	err = postgres.NewPayouts(pool).Lines(a.ctx, payrecon.PayoutLinesQuery{From: from, To: to, Account: acct}, func(r payrecon.PayoutLineRow) error {
		if err := cw.Write(r); err != nil {
			return err
		}
		if cw.Lines()%1000 == 0 {
			return cw.Flush()
		}
		return nil
	})
	if ferr := cw.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	a.logger.Info("payout lines exported", "lines", cw.Lines(), "from", c.From, "to", c.To, "output", orDefault(c.Output, "stdout"))
	return nil
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:max(i, 1)]
	}
	return "."
}

// payoutsAccess checks, before `run` starts, that the key may read payouts
// and balance transactions, and returns the payouts interval to use: the
// one asked for, or 0 (off) when the key lacks Payouts: Read or Balance:
// Read, said in one log line; the rest of payrecon runs on. An outage only
// warns (the rounds retry).
func (a *app) payoutsAccess(f stripeFlags, interval time.Duration) (time.Duration, error) {
	if interval <= 0 {
		return 0, nil
	}
	gw, err := a.gateway(f, nil)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	err = gw.CheckPayoutAccess(ctx, "")
	switch {
	case err == nil:
		return interval, nil
	case errors.Is(err, payrecon.ErrConfig):
		a.logger.Warn("payouts check off: the Stripe key may not read payouts and balance transactions (grant Payouts: Read and Balance: Read to check settlement)",
			"error", err)
		return 0, nil
	case a.ctx.Err() != nil:
		return 0, a.ctx.Err()
	}
	a.logger.Warn("Stripe did not answer the payouts access check; the payouts check runs and retries", "error", err)
	return interval, nil
}

// describeSettled says what the payouts said on a settlement finding.
func describeSettled(d payrecon.SettlementDetails) string {
	if d.Charges == 0 {
		return "in no payout read"
	}
	at := ""
	if d.ArrivalDate != nil {
		at = ", arriving " + d.ArrivalDate.UTC().Format(time.DateOnly)
	}
	return fmt.Sprintf("payout %s%s: gross %s, fee %s, net %s (kept after refunds and disputes %s)", d.PayoutID, at,
		money(d.Gross, d.Currency), money(d.Fee, d.Currency), money(d.Net, d.Currency), money(d.Kept, d.Currency))
}
