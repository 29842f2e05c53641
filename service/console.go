package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

// AdminAddrDefault is the admin listener's default address: loopback only.
const AdminAddrDefault = "127.0.0.1:8081"

// NotifyKind is River's job kind of application notifications
// (relay.NotifyKind); the console counts its backlog and dead letters.
const NotifyKind = relay.NotifyKind

// ErrConsoleExposed: the admin listener would serve the console and River's
// dashboard, without a password, beyond this machine.
var ErrConsoleExposed = errors.New("the console has no password and the admin address is not loopback")

// ConsolePasswordMinLength is the shortest console password accepted for
// an admin address beyond loopback, in characters: with the login limits
// (30 attempts a minute for the whole process), 12 characters of a
// password manager's alphabet outlast any online guessing.
const ConsolePasswordMinLength = 12

// CheckAdminExposure refuses an admin address other than loopback when the
// console has no password (anyone who reached it could resolve findings
// and delete repair jobs), or one shorter than ConsolePasswordMinLength.
// The error is one line naming the fix.
func CheckAdminExposure(addr, password string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--admin-addr %q is not host:port: %w", addr, err)
	}
	if isLoopback(host) {
		return nil
	}
	if password == "" {
		return fmt.Errorf("%w: --admin-addr %s would let anyone reach it; set PAYRECON_CONSOLE_PASSWORD (or --console-password-file), or bind --admin-addr to 127.0.0.1",
			ErrConsoleExposed, addr)
	}
	if n := utf8.RuneCountInString(password); n < ConsolePasswordMinLength {
		return fmt.Errorf("%w: the console password has %d characters; --admin-addr %s is not loopback, so it needs at least %d (or bind --admin-addr to 127.0.0.1)",
			ErrConsolePasswordShort, n, addr, ConsolePasswordMinLength)
	}
	return nil
}

// ErrConsolePasswordShort: a console password too short for an admin
// address beyond loopback.
var ErrConsolePasswordShort = errors.New("console password too short")

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newConsole builds the console on the service's parts: the read model on
// the pool, actions through the same code paths as the CLI (findings
// resolve, findings recheck, relay --retry), Stripe's health from the
// limiter and the metrics.
func (s *Service) newConsole(pool *pgxpool.Pool, recheck *sweep.Sweeper) (*console.Console, *console.Sampler, error) {
	reader := postgres.NewConsoleReader(pool, postgres.ConsoleConfig{RepairKind: relay.Kind, NotifyKind: NotifyKind, Clock: s.cfg.Clock, Accounts: s.cfg.Accounts})
	cc := s.cfg.Console
	cc.Password = s.cfg.ConsolePassword
	cc.Read = reader
	if s.cfg.Payouts.Interval > 0 {
		cc.Payouts = postgres.NewPayouts(pool)
	}
	cc.Sessions = postgres.NewConsoleSessions(pool)
	if s.cfg.Accounts.Found { // a platform on Connect: the Accounts pages
		minCycle := s.cfg.Sweep.MinCycle
		if minCycle == 0 {
			minCycle = sweep.DefaultConfig().MinCycle
		}
		cc.Accounts = postgres.NewConsoleAccounts(pool, s.cfg.Accounts, cmp.Or(s.cfg.Sweep.Job, sweep.DefaultJob)).
			WithAllocation(cmp.Or(s.cfg.Sweep.Mode, sweep.DefaultConfig().Mode).ReadsPerRow(), max(minCycle, 0), s.cfg.MinCycles)
	}
	cc.Actions = &consoleActions{
		audit:    postgres.NewConsoleAudit(pool, s.cfg.Clock),
		findings: postgres.NewFindings(pool, s.cfg.Clock),
		store:    postgres.NewStore(pool).ForAccount(s.cfg.Accounts, ""),
		sweeper:  recheck,
		gateway:  s.gateway,
		relay:    s.relay,
		account:  s.accountRecheck,
	}
	cc.Logger = s.cfg.Logger.With("component", "console")
	cc.Clock = s.cfg.Clock
	cc.StripeHealthFunc = s.stripeHealth
	c, err := console.New(cc)
	if err != nil {
		return nil, nil, err
	}
	sampler := &console.Sampler{Store: reader, Clock: s.cfg.Clock, Logger: cc.Logger}
	return c, sampler, nil
}

// stripeHealth reads the limiter and the Stripe request counters.
func (s *Service) stripeHealth() console.StripeHealth {
	h := console.StripeHealth{Rate: s.limiter.Limit(), Budget: s.limiter.Budget(), Requests: map[string]float64{}}
	mfs, err := s.registry.Gather()
	if err != nil {
		s.log.Warn("console: gather Stripe metrics", "error", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "payrecon_stripe_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					h.Requests[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return h
}

// consoleActions are the console's actions, each recorded in the audit
// trail with the operator's name.
type consoleActions struct {
	audit    *postgres.ConsoleAudit
	findings *postgres.Findings
	store    *postgres.Store
	sweeper  *sweep.Sweeper
	gateway  payrecon.Gateway
	relay    *relay.Relay
	// account, when set, returns the sweeper that rechecks a connected
	// account's row (its Stripe-Account, its job).
	account func(account string) *sweep.Sweeper
}

// Resolve closes the finding and records the action in one statement.
func (a *consoleActions) Resolve(ctx context.Context, findingID int64, operator, note string) error {
	return a.audit.Resolve(ctx, findingID, operator, note)
}

// Recheck is `payrecon findings recheck`: Stripe is asked now, through the
// sweep's own Recheck, and the finding heals, is superseded or stays.
func (a *consoleActions) Recheck(ctx context.Context, findingID int64, operator string) (string, error) {
	f, err := a.findings.Get(ctx, findingID)
	if err != nil {
		return "", err
	}
	msg, err := a.recheck(ctx, f)
	outcome := msg
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	if rerr := a.audit.Record(ctx, console.AuditEntry{Operator: operator, Action: postgres.ConsoleActionRecheck,
		FindingID: findingID, Outcome: outcome}); rerr != nil {
		return msg, errors.Join(err, rerr)
	}
	return msg, err
}

func (a *consoleActions) recheck(ctx context.Context, f postgres.Finding) (string, error) {
	paymentID := int64(0)
	if f.PaymentID != nil {
		paymentID = *f.PaymentID
	} else {
		id, err := a.audit.PaymentOfIntent(ctx, f.IntentID)
		if err != nil {
			return "", err
		}
		paymentID = id
	}
	if paymentID == 0 { // missing_locally, still no local row: what does Stripe say now?
		in, err := a.gateway.RetrieveIntent(ctx, f.IntentID)
		status := string(in.Status)
		if errors.Is(err, payrecon.ErrNotFound) {
			status, err = "no such PaymentIntent", nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Stripe says %s; PaymentIntent %s still has no local row, so finding %d stays open.", status, f.IntentID, f.ID), nil
	}
	row, err := a.store.SweepRow(ctx, paymentID)
	if err != nil {
		return "", err
	}
	sw := a.sweeper
	if row.Account != "" && a.account != nil {
		sw = a.account(row.Account)
	}
	_, checks, err := sw.Recheck(ctx, []payrecon.PaymentRow{row})
	if err != nil {
		return "", err
	}
	after, err := a.findings.Get(ctx, f.ID)
	if err != nil {
		return "", err
	}
	ch := checks[0]
	observed := string(ch.Observed)
	if observed == "" {
		observed = "(not read)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Payment %d: local %s, Stripe %s → %s", row.ID, row.Status, observed, ch.Decision.Verdict)
	if ch.Decision.Kind != "" {
		fmt.Fprintf(&b, " (%s)", ch.Decision.Kind)
	}
	if after.Open() {
		fmt.Fprintf(&b, "; finding %d stays open.", f.ID)
	} else {
		fmt.Fprintf(&b, "; finding %d resolved: %s.", f.ID, *after.Resolution)
	}
	return b.String(), nil
}

// RetryDeadLetter is `payrecon relay --retry`.
func (a *consoleActions) RetryDeadLetter(ctx context.Context, jobID int64, operator string) (string, error) {
	findingID, ferr := a.audit.FindingOfJob(ctx, jobID)
	job, err := a.relay.Retry(ctx, jobID)
	msg, outcome := "", ""
	if err == nil {
		msg = fmt.Sprintf("Repair job %d retried: %s, attempt %d of %d.", jobID, job.State, job.Attempt, job.MaxAttempts)
		outcome = msg
	} else {
		outcome = "refused: " + err.Error()
	}
	rerr := a.audit.Record(ctx, console.AuditEntry{Operator: operator, Action: postgres.ConsoleActionRetry,
		FindingID: findingID, JobID: jobID, Outcome: outcome})
	return msg, errors.Join(err, ferr, rerr)
}

// ApproveRepairs is `payrecon repairs approve`: each command settled is
// recorded in the audit trail with the operator, approved or dropped.
func (a *consoleActions) ApproveRepairs(ctx context.Context, outboxIDs []int64, all bool, operator string) (string, error) {
	rep, err := a.relay.Approve(ctx, outboxIDs, all, operator)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	record := func(s relay.Settled, outcome string) {
		if rerr := a.audit.Record(ctx, console.AuditEntry{Operator: operator, Action: postgres.ConsoleActionApprove,
			FindingID: s.FindingID, JobID: s.JobID, Outcome: outcome}); rerr != nil {
			errs = append(errs, rerr)
		}
	}
	for _, s := range rep.Approved {
		record(s, fmt.Sprintf("approved repair command %d", s.OutboxID))
	}
	for _, s := range rep.Dropped {
		record(s, fmt.Sprintf("dropped repair command %d, never applied: %s", s.OutboxID, strings.TrimPrefix(s.Dropped, relay.OutcomeDroppedPrefix)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Approved %d held repair%s", len(rep.Approved), plural(len(rep.Approved)))
	if len(rep.Approved) > 0 {
		b.WriteString("; a running replica applies each once")
	}
	b.WriteString(".")
	if len(rep.Dropped) > 0 {
		fmt.Fprintf(&b, " Dropped %d whose finding had closed (never applied).", len(rep.Dropped))
	}
	if len(rep.NotHeld) > 0 {
		fmt.Fprintf(&b, " %d not held any more (approved, applied or dropped already).", len(rep.NotHeld))
	}
	return b.String(), errors.Join(errs...)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
