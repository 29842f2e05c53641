// Package action is what an operator does to findings, written once for
// every road that offers it: `payrecon findings recheck|resolve`,
// `payrecon relay --retry`, `payrecon repairs approve` and the console's
// buttons. A recheck reads the payment through the sweep's own store (its
// money columns, its account, its repair mode) and judges it with the
// sweep's own Recheck, so a money finding heals or stands from the console
// exactly as from the CLI. Each action can be recorded in the console's
// audit trail (By.Audit); a resolution and its audit entry are one
// statement.
package action

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/readmodel"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

// Config is what the actions are built on.
type Config struct {
	// Store is the sweep's store: with its money columns
	// (WithMoneyColumns), its repair mode and hold, its enqueue function.
	// Required for Recheck.
	Store *postgres.Store
	// Accounts is the account column (Connect); not Found: none. A row is
	// read, and rechecked, as its own account (its Stripe-Account, its job).
	Accounts postgres.AccountColumn
	// Gateway reads Stripe as the platform. Required for Recheck.
	Gateway payrecon.Gateway
	// AccountGateway returns the gateway reading as a connected account;
	// nil: Gateway for every account.
	AccountGateway func(account string) payrecon.Gateway
	// Sweep configures the recheck's sweeper as the continuous sweep is
	// configured (Job, Money, Limiter, Clock, Logger).
	Sweep sweep.Config
	// Relay retries dead letters and approves held repairs; nil: those
	// two actions are refused.
	Relay *relay.Relay
	// Clock stamps resolutions and audit entries; nil: the system clock.
	Clock payrecon.Clock
}

// Actions are the finding actions on one database.
type Actions struct {
	cfg      Config
	findings *postgres.Findings
	audit    *postgres.ConsoleAudit
}

// New returns the actions on pool.
func New(pool *pgxpool.Pool, cfg Config) (*Actions, error) {
	if pool == nil {
		return nil, errors.New("finding actions: no database pool")
	}
	if cfg.Clock == nil {
		cfg.Clock = payrecon.SystemClock{}
	}
	return &Actions{cfg: cfg, findings: postgres.NewFindings(pool, cfg.Clock), audit: postgres.NewConsoleAudit(pool, cfg.Clock)}, nil
}

// By says who acts and whether the console's audit trail records it.
type By struct {
	Operator string
	// Audit records the action in console_audit.
	Audit bool
}

// Resolve closes an open finding by hand with a note; with by.Audit the
// audit entry is written in the same statement.
func (a *Actions) Resolve(ctx context.Context, findingID int64, by By, note string) (payrecon.Finding, error) {
	return a.findings.Resolve(ctx, postgres.Resolve{ID: findingID, By: by.Operator, Note: note, Audit: by.Audit})
}

// Rechecked is what a recheck found.
type Rechecked struct {
	// Finding is the finding after the recheck: resolved (healed or
	// superseded) or still open.
	Finding payrecon.Finding
	// NoLocalRow: the finding's PaymentIntent still has no payments row
	// (missing_locally); only Stripe was asked, IntentStatus is its answer
	// (payrecon.NotFound for a 404), and the finding stays open.
	NoLocalRow   bool
	IntentStatus payrecon.StripeStatus
	// Row and Check are the payment as read and the sweep's judgement of
	// it, when it has a row.
	Row   payrecon.PaymentRow
	Check payrecon.Check
}

// String says what happened, in one sentence (the console's flash and
// audit outcome).
func (r Rechecked) String() string {
	if r.NoLocalRow {
		status := string(r.IntentStatus)
		if r.IntentStatus == payrecon.NotFound {
			status = "no such PaymentIntent"
		}
		return fmt.Sprintf("Stripe says %s; PaymentIntent %s still has no local row, so finding %d stays open.", status, r.Finding.IntentID, r.Finding.ID)
	}
	observed := string(r.Check.Observed)
	if observed == "" {
		observed = "(not read)"
	}
	s := fmt.Sprintf("Payment %d: local %s, Stripe %s → %s", r.Row.ID, r.Row.Status, observed, r.Check.Decision.Verdict)
	if r.Check.Decision.Kind != "" {
		s += fmt.Sprintf(" (%s)", r.Check.Decision.Kind)
	}
	if r.Finding.Open() {
		return s + fmt.Sprintf("; finding %d stays open.", r.Finding.ID)
	}
	return s + fmt.Sprintf("; finding %d resolved: %s.", r.Finding.ID, *r.Finding.Resolution)
}

// Recheck asks Stripe about the finding's payment now, through the sweep's
// own Recheck on the sweep's own store: the finding heals, is superseded,
// or stays. With by.Audit the outcome (or the failure) is audited.
func (a *Actions) Recheck(ctx context.Context, findingID int64, by By) (Rechecked, error) {
	r, err := a.recheck(ctx, findingID)
	if !by.Audit {
		return r, err
	}
	outcome := r.String()
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	if rerr := a.audit.Record(ctx, readmodel.AuditEntry{Operator: by.Operator, Action: postgres.ConsoleActionRecheck,
		FindingID: findingID, Outcome: outcome}); rerr != nil {
		return r, errors.Join(err, rerr)
	}
	return r, err
}

func (a *Actions) recheck(ctx context.Context, findingID int64) (Rechecked, error) {
	if a.cfg.Gateway == nil || a.cfg.Store == nil {
		return Rechecked{}, errors.New("recheck: no Stripe gateway or no sweep store")
	}
	f, err := a.findings.Get(ctx, findingID)
	if err != nil {
		return Rechecked{}, err
	}
	r := Rechecked{Finding: f}
	paymentID := int64(0)
	if f.PaymentID != nil {
		paymentID = *f.PaymentID
	} else if paymentID, err = a.findings.PaymentIDByIntent(ctx, f.IntentID); err != nil {
		return r, err
	}
	if paymentID == 0 { // missing_locally, still no local row: what does Stripe say now?
		in, err := a.cfg.Gateway.RetrieveIntent(ctx, f.IntentID)
		r.NoLocalRow, r.IntentStatus = true, in.Status
		if errors.Is(err, payrecon.ErrNotFound) {
			r.IntentStatus, err = payrecon.NotFound, nil
		}
		return r, err
	}
	if r.Row, err = a.cfg.Store.ForAccount(a.cfg.Accounts, "").SweepRow(ctx, paymentID); err != nil {
		return r, err
	}
	_, checks, err := a.sweeper(r.Row.Account).Recheck(ctx, []payrecon.PaymentRow{r.Row})
	if err != nil {
		return r, err
	}
	r.Check = checks[0]
	if r.Finding, err = a.findings.Get(ctx, f.ID); err != nil {
		return r, err
	}
	return r, nil
}

// sweeper is the recheck's sweeper for an account's rows ("" the
// platform's own): its store, its Stripe-Account, its job.
func (a *Actions) sweeper(account string) *sweep.Sweeper {
	cfg := a.cfg.Sweep
	if cfg.Job == "" {
		cfg.Job = sweep.DefaultJob
	}
	cfg.Job = payrecon.AccountJob(cfg.Job, account)
	gw := a.cfg.Gateway
	if account != "" && a.cfg.AccountGateway != nil {
		gw = a.cfg.AccountGateway(account)
	}
	return sweep.New(a.cfg.Store.ForAccount(a.cfg.Accounts, account), gw, cfg)
}

// RetryDeadLetter makes a dead-lettered repair or notification job run
// again; with by.Audit the outcome (or the refusal) is audited with the
// finding the job's command was queued with.
func (a *Actions) RetryDeadLetter(ctx context.Context, jobID int64, by By) (relay.JobInfo, error) {
	if a.cfg.Relay == nil {
		return relay.JobInfo{}, errors.New("retry: no relay")
	}
	job, err := a.cfg.Relay.Retry(ctx, jobID)
	if !by.Audit {
		return job, err
	}
	findingID, ferr := a.audit.FindingOfJob(ctx, jobID)
	outcome := fmt.Sprintf("Repair job %d retried: %s, attempt %d of %d.", jobID, job.State, job.Attempt, job.MaxAttempts)
	if err != nil {
		outcome = "refused: " + err.Error()
	}
	rerr := a.audit.Record(ctx, readmodel.AuditEntry{Operator: by.Operator, Action: postgres.ConsoleActionRetry,
		FindingID: findingID, JobID: jobID, Outcome: outcome})
	return job, errors.Join(err, ferr, rerr)
}

// ApproveRepairs lets held repair commands through (every held one with
// all, else ids): a command whose finding closed meanwhile is dropped,
// never applied. With by.Audit each command settled is audited, approved
// or dropped.
func (a *Actions) ApproveRepairs(ctx context.Context, ids []int64, all bool, by By) (relay.ApproveReport, error) {
	if a.cfg.Relay == nil {
		return relay.ApproveReport{}, errors.New("approve repairs: no relay")
	}
	rep, err := a.cfg.Relay.Approve(ctx, ids, all, by.Operator)
	if !by.Audit {
		return rep, err
	}
	errs := []error{err}
	record := func(s relay.Settled, outcome string) {
		errs = append(errs, a.audit.Record(ctx, readmodel.AuditEntry{Operator: by.Operator, Action: postgres.ConsoleActionApprove,
			FindingID: s.FindingID, JobID: s.JobID, Outcome: outcome}))
	}
	for _, s := range rep.Approved {
		record(s, fmt.Sprintf("approved repair command %d", s.OutboxID))
	}
	for _, s := range rep.Dropped {
		record(s, fmt.Sprintf("dropped repair command %d, never applied: %s", s.OutboxID, strings.TrimPrefix(s.Dropped, relay.OutcomeDroppedPrefix)))
	}
	return rep, errors.Join(errs...)
}
