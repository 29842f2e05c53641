package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

type findingsCmd struct {
	List    findingsListCmd    `cmd:"" help:"List findings (open ones by default)."`
	Show    findingsShowCmd    `cmd:"" help:"Show one finding: the payment, what Stripe said, the repair command and its delivery."`
	Resolve findingsResolveCmd `cmd:"" help:"Resolve a finding by hand, with a note saying why (who and why are recorded)."`
	Recheck findingsRecheckCmd `cmd:"" help:"Check a finding's payment against Stripe now; heals, supersedes or confirms it."`
}

type findingsListCmd struct {
	Kind      []string      `help:"Only these kinds (repeatable or comma-separated): ${kinds}."`
	Verdict   []string      `help:"Only these verdicts: repairable, needs_review."`
	State     string        `enum:"open,resolved,all" default:"open" help:"open, resolved or all."`
	OlderThan time.Duration `name:"older-than" help:"Only findings detected longer ago than this (e.g. 24h)."`
	NewerThan time.Duration `name:"newer-than" help:"Only findings detected within this (e.g. 1h)."`
	Payment   int64         `help:"Only findings of this payment id."`
	Account   string        `placeholder:"acct_…" help:"Connect: only findings of this account's payments (\"platform\" for the platform's own)."`
	accountColumnFlag
	Limit int  `default:"100" help:"At most this many, newest first."`
	JSON  bool `help:"Print JSON."`
}

func (c *findingsListCmd) Run(a *app) error {
	flt := postgres.FindingFilter{State: c.State, PaymentID: c.Payment, Limit: c.Limit}
	for _, k := range splitAll(c.Kind) {
		if !knownKind(payrecon.Kind(k)) {
			return usageError{fmt.Errorf("--kind %q is not a finding kind (see payrecon findings list --help)", k)}
		}
		flt.Kinds = append(flt.Kinds, payrecon.Kind(k))
	}
	for _, v := range splitAll(c.Verdict) {
		if v != string(payrecon.Repairable) && v != string(payrecon.NeedsReview) {
			return usageError{fmt.Errorf("--verdict %q: a finding is repairable or needs_review", v)}
		}
		flt.Verdicts = append(flt.Verdicts, payrecon.Verdict(v))
	}
	if err := checkPositiveInt("--limit", c.Limit); err != nil {
		return err
	}
	if err := checkNonNegativeDuration("--older-than", c.OlderThan); err != nil {
		return err
	}
	if err := checkNonNegativeDuration("--newer-than", c.NewerThan); err != nil {
		return err
	}
	now := time.Now()
	if c.OlderThan > 0 {
		flt.DetectedBefore = now.Add(-c.OlderThan)
	}
	if c.NewerThan > 0 {
		flt.DetectedAfter = now.Add(-c.NewerThan)
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	if c.Account != "" {
		acct, err := accountArg(c.Account)
		if err != nil {
			return err
		}
		if flt.Accounts, err = a.accountColumn(pool, c.accountColumnFlag); err != nil {
			return err
		}
		if !flt.Accounts.Found {
			return usageError{fmt.Errorf("--account %s: payments has no account column (%s)", c.Account, flt.Accounts.Problem)}
		}
		flt.Account = &acct
	}
	fs, err := postgres.NewFindings(pool, nil).List(a.ctx, flt)
	if err != nil {
		return err
	}
	if c.JSON {
		if fs == nil {
			fs = []payrecon.Finding{}
		}
		return a.printJSON(fs)
	}
	if len(fs) == 0 {
		fmt.Fprintf(a.stdout, "no %s findings\n", c.State)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tVERDICT\tPAYMENT\tINTENT\tLOCAL/STRIPE\tDETECTED\tSTATE")
	for _, f := range fs {
		pay := "—"
		if f.PaymentID != nil {
			pay = fmt.Sprint(*f.PaymentID)
		}
		state := "open"
		if !f.Open() {
			state = "resolved: " + string(*f.Resolution)
		} else if f.RepairOutcome != "" {
			state = "open: " + f.RepairOutcome
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\n", f.ID, term(string(f.Kind)), term(string(f.Verdict)), pay, term(f.IntentID),
			term(f.LocalStatus), term(orDefault(f.ExternalStatus, "—")), ago(now, f.DetectedAt), term(state))
	}
	return tw.Flush()
}

func knownKind(k payrecon.Kind) bool {
	for _, x := range payrecon.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

func splitAll(vs []string) []string {
	var out []string
	for _, v := range vs {
		out = append(out, splitList(v)...)
	}
	return out
}

type findingsShowCmd struct {
	ID   int64 `arg:"" help:"Finding id."`
	JSON bool  `help:"Print JSON."`
}

type findingDetail struct {
	Finding  payrecon.Finding       `json:"finding"`
	Payment  *payrecon.Payment      `json:"payment,omitempty"`
	Repair   *relay.Delivery        `json:"repair,omitempty"`
	Webhooks []postgres.IntentEvent `json:"webhook_events"`
	// Transitions are the payment's, oldest first.
	Transitions []payrecon.PaymentTransition `json:"transitions"`
}

func (c *findingsShowCmd) Run(a *app) error {
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	repo := postgres.NewFindings(pool, nil)
	f, err := getFinding(a, repo, c.ID)
	if err != nil {
		return err
	}
	d := findingDetail{Finding: f}
	if f.PaymentID != nil {
		p, err := repo.Payment(a.ctx, *f.PaymentID)
		if err != nil {
			return err
		}
		d.Payment = &p
		if f.IntentID == "" {
			f.IntentID = p.IntentID
		}
		if d.Transitions, err = repo.Transitions(a.ctx, p.ID, 1000); err != nil {
			return err
		}
	}
	if d.Transitions == nil {
		d.Transitions = []payrecon.PaymentTransition{}
	}
	if oid, err := repo.RepairCommandFor(a.ctx, f.ID); err != nil {
		return err
	} else if oid != 0 {
		rl, err := a.insertOnlyRelay(pool)
		if err != nil {
			return err
		}
		del, err := rl.Delivery(a.ctx, oid)
		if err != nil {
			return err
		}
		d.Repair = &del
	}
	if d.Webhooks, err = repo.IntentEvents(a.ctx, f.IntentID, 50); err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(d)
	}
	printFinding(a, d)
	return nil
}

// getFinding reads a finding, with a clear error when there is none.
func getFinding(a *app, repo *postgres.Findings, id int64) (payrecon.Finding, error) {
	f, err := repo.Get(a.ctx, id)
	if errors.Is(err, payrecon.ErrNotFound) {
		return f, fmt.Errorf("no finding %d (see payrecon findings list)", id)
	}
	return f, err
}

func printFinding(a *app, d findingDetail) {
	f := d.Finding
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "finding\t%d: %s (%s)\n", f.ID, term(string(f.Kind)), term(string(f.Verdict)))
	fmt.Fprintf(tw, "why\t%s\n", term(orDefault(f.Reason, "—")))
	fmt.Fprintf(tw, "detected\t%s (%s) by %s\n", f.DetectedAt.UTC().Format(time.RFC3339), ago(now, f.DetectedAt), term(orDefault(f.Job, "—")))
	fmt.Fprintf(tw, "at detection\tlocal %s, Stripe %s\n", term(f.LocalStatus), term(orDefault(f.ExternalStatus, "(no such PaymentIntent)")))
	if st := f.Details; st != nil && st.Settlement != nil {
		fmt.Fprintf(tw, "settled\t%s\n", term(describeSettled(*st.Settlement)))
		if st.LocalAmount != nil || st.LocalCurrency != "" {
			fmt.Fprintf(tw, "local money\t%s\n", term(describeLocalMoney(*st)))
		}
	} else if f.Details != nil {
		fmt.Fprintf(tw, "Stripe\t%s\n", term(describeStripeMoney(*f.Details)))
		if f.Details.LocalAmount != nil || f.Details.LocalCurrency != "" {
			fmt.Fprintf(tw, "local money\t%s\n", term(describeLocalMoney(*f.Details)))
		}
	}
	if f.Open() {
		fmt.Fprintf(tw, "state\topen\n")
	} else {
		fmt.Fprintf(tw, "state\tresolved %s (%s) by %s\n", f.ResolvedAt.UTC().Format(time.RFC3339), term(string(*f.Resolution)), term(f.ResolvedBy))
		if f.ResolutionNote != "" {
			fmt.Fprintf(tw, "note\t%s\n", term(f.ResolutionNote))
		}
	}
	if p := d.Payment; p != nil {
		fmt.Fprintf(tw, "\npayment\t%d, order %s, intent %s\n", p.ID, term(p.OrderID), term(orDefault(p.IntentID, "(none)")))
		fmt.Fprintf(tw, "now\t%s (version %d, updated %s)\n", term(p.Status), p.Version, ago(now, p.UpdatedAt))
		last := "never"
		if p.LastReconciledAt != nil {
			last = fmt.Sprintf("%s, Stripe said %s", ago(now, *p.LastReconciledAt), term(p.ObservedStatus))
		}
		fmt.Fprintf(tw, "last verified\t%s\n", last)
		printTransitions(tw, d.Transitions)
	} else {
		fmt.Fprintf(tw, "\npayment\tnone: PaymentIntent %s has no local row\n", term(f.IntentID))
	}
	if r := d.Repair; r != nil {
		fmt.Fprintf(tw, "\nrepair command\toutbox %d, %s, queued %s\n", r.OutboxID, term(r.EventType), ago(now, r.CreatedAt))
		fmt.Fprintf(tw, "delivery\t%s", term(string(r.State)))
		if r.Job != nil {
			fmt.Fprintf(tw, " (River job %d, attempt %d of %d)", r.Job.ID, r.Job.Attempt, r.Job.MaxAttempts)
		}
		fmt.Fprintln(tw)
		if r.Outcome != "" {
			fmt.Fprintf(tw, "outcome\t%s\n", term(r.Outcome))
		}
		if r.LastError != "" {
			fmt.Fprintf(tw, "last error\t%s\n", term(r.LastError))
		}
		if r.State == relay.DeliveryDeadLetter && r.Job != nil {
			fmt.Fprintf(tw, "\t(retry with: payrecon relay --retry %d)\n", r.Job.ID)
		}
	} else if f.RepairCommand != "" {
		fmt.Fprintf(tw, "\nrepair command\t%s (no longer in the outbox: processed commands are pruned after --retain-outbox)\n", term(string(f.RepairCommand)))
	}
	if f.RepairOutcome != "" {
		fmt.Fprintf(tw, "repair outcome\t%s\n", term(f.RepairOutcome))
	}
	if len(d.Webhooks) > 0 {
		fmt.Fprintf(tw, "\nwebhooks\t\n")
		for _, e := range d.Webhooks {
			fmt.Fprintf(tw, "  %s\t%s %s → %s\n", e.ReceivedAt.UTC().Format(time.RFC3339), term(e.EventID), term(e.EventType), term(e.Outcome))
		}
	}
	_ = tw.Flush()
}

type findingsResolveCmd struct {
	ID   int64  `arg:"" help:"Finding id."`
	Note string `required:"" help:"Why it is resolved (what was done, or why nothing needs doing)."`
	By   string `help:"Who resolves it (default: $USER)."`
	JSON bool   `help:"Print JSON."`
}

func (c *findingsResolveCmd) Run(a *app) error {
	by := c.By
	if by == "" {
		by = a.getenv("USER")
	}
	if by == "" {
		return usageError{errors.New("say who resolves the finding: --by NAME (or set USER)")}
	}
	if strings.TrimSpace(c.Note) == "" {
		return usageError{errors.New("--note must say why the finding is resolved")}
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	acts, err := action.New(pool, action.Config{})
	if err != nil {
		return err
	}
	f, err := acts.Resolve(a.ctx, c.ID, action.By{Operator: by}, c.Note)
	if errors.Is(err, payrecon.ErrNotFound) {
		return fmt.Errorf("no finding %d (see payrecon findings list)", c.ID)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(f)
	}
	fmt.Fprintf(a.stdout, "finding %d (%s) resolved by %s: %s\n", f.ID, f.Kind, term(f.ResolvedBy), term(f.ResolutionNote))
	return nil
}

type findingsRecheckCmd struct {
	stripeFlags
	// The money checks judge as the sweep does: without them a money
	// finding is left as it is, never healed by a check that did not
	// look.
	moneyFlags
	repairModeFlag
	ID int64 `arg:"" help:"Finding id."`
	jobFlag
	JSON bool `help:"Print JSON."`
}

func (c *findingsRecheckCmd) Run(a *app) error {
	gw, err := a.gateway(c.stripeFlags, nil)
	if err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	if _, err := getFinding(a, postgres.NewFindings(pool, nil), c.ID); err != nil {
		return err
	}
	store, err := a.reviewStore(pool, c.mode())
	if err != nil {
		return err
	}
	cfg := sweep.Config{Job: c.Job, Logger: a.logger}
	if cfg.Money.Ignore, err = c.ignore(); err != nil {
		return err
	}
	if store, cfg, _, err = a.withMoney(pool, store, cfg, c.moneyFlags); err != nil {
		return err
	}
	// Connect: the row is read, and rechecked, as its own account (its
	// Stripe-Account, its job), never as the platform.
	accounts, err := a.accountColumn(pool, c.accountColumnFlag)
	if err != nil {
		return err
	}
	acts, err := action.New(pool, action.Config{Store: store, Accounts: accounts, Gateway: gw, Sweep: cfg,
		AccountGateway: func(account string) payrecon.Gateway { return gw.ForAccount(account, nil) }})
	if err != nil {
		return err
	}
	r, err := acts.Recheck(a.ctx, c.ID, action.By{})
	if err != nil {
		return err
	}
	f := r.Finding
	if r.NoLocalRow {
		status := string(r.IntentStatus)
		if r.IntentStatus == payrecon.NotFound {
			status = "(no such PaymentIntent)"
		}
		out := map[string]any{"finding_id": f.ID, "kind": f.Kind, "stripe_status": status, "still_open": true,
			"reason": "the PaymentIntent still has no local payments row"}
		if c.JSON {
			return a.printJSON(out)
		}
		fmt.Fprintf(a.stdout, "finding %d (%s): Stripe says %s; still no local row, the finding stays open\n", f.ID, f.Kind, status)
		return nil
	}
	ch := r.Check
	if c.JSON {
		return a.printJSON(map[string]any{"finding": f, "check": map[string]any{
			"local_status": ch.Row.Status, "stripe_status": ch.Observed, "decision": ch.Decision, "error": ch.Err}})
	}
	fmt.Fprintf(a.stdout, "payment %d: local %s, Stripe %s → %s", r.Row.ID, r.Row.Status, orDefault(string(ch.Observed), "(not read)"), ch.Decision.Verdict)
	if ch.Decision.Kind != "" {
		fmt.Fprintf(a.stdout, " (%s)", ch.Decision.Kind)
	}
	fmt.Fprintf(a.stdout, "\n  %s\n", ch.Decision.Reason)
	if f.Open() {
		fmt.Fprintf(a.stdout, "finding %d stays open\n", f.ID)
	} else {
		fmt.Fprintf(a.stdout, "finding %d resolved: %s\n", f.ID, *f.Resolution)
	}
	return nil
}
