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

	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/console"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
	"github.com/payrecon/payrecon/sweep"
)

// AdminAddrDefault is the admin listener's default address: loopback only.
const AdminAddrDefault = "127.0.0.1:8081"

// HTTPAddrDefault is the public listener's default address (the webhook
// and health): loopback only.
const HTTPAddrDefault = "127.0.0.1:8080"

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

// The console reads through postgres; postgres imports only the read
// models (package readmodel), never the console.
var (
	_ console.ReadModel      = (*postgres.ConsoleReader)(nil)
	_ console.SampleStore    = (*postgres.ConsoleReader)(nil)
	_ console.SessionStore   = (*postgres.ConsoleSessions)(nil)
	_ console.AccountsReader = (*postgres.ConsoleAccounts)(nil)
)

// newConsole builds the console on the service's parts: the read model on
// the pool, the finding actions the CLI uses too (package action), Stripe's
// health from the limiter and the metrics.
func (s *Service) newConsole(pool *pgxpool.Pool, actions *action.Actions) (*console.Console, *console.Sampler, error) {
	rc := postgres.ConsoleConfig{RepairKind: relay.Kind, NotifyKind: NotifyKind, Clock: s.cfg.Clock, Accounts: s.cfg.Accounts}
	if s.cfg.Accounts.Found {
		rc.AccountsJob = cmp.Or(s.cfg.Sweep.Job, sweep.DefaultJob)
	}
	reader := postgres.NewConsoleReader(pool, rc)
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
	cc.Actions = &consoleActions{actions: actions}
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

// consoleActions are the console's actions: the finding actions the CLI
// uses too (package action), each audited with the operator's name, put in
// words.
type consoleActions struct {
	actions *action.Actions
}

// Resolve closes the finding and records the action in one statement.
func (a *consoleActions) Resolve(ctx context.Context, findingID int64, operator, note string) error {
	_, err := a.actions.Resolve(ctx, findingID, action.By{Operator: operator, Audit: true}, note)
	return err
}

// Recheck is `payrecon findings recheck`: Stripe is asked now, through the
// sweep's own Recheck on the sweep's own (money-aware) store, and the
// finding heals, is superseded or stays.
func (a *consoleActions) Recheck(ctx context.Context, findingID int64, operator string) (string, error) {
	r, err := a.actions.Recheck(ctx, findingID, action.By{Operator: operator, Audit: true})
	if err != nil {
		return "", err
	}
	return r.String(), nil
}

// RetryDeadLetter is `payrecon relay --retry`.
func (a *consoleActions) RetryDeadLetter(ctx context.Context, jobID int64, operator string) (string, error) {
	job, err := a.actions.RetryDeadLetter(ctx, jobID, action.By{Operator: operator, Audit: true})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Repair job %d retried: %s, attempt %d of %d.", jobID, job.State, job.Attempt, job.MaxAttempts), nil
}

// ApproveRepairs is `payrecon repairs approve`: each command settled is
// recorded in the audit trail with the operator, approved or dropped.
func (a *consoleActions) ApproveRepairs(ctx context.Context, outboxIDs []int64, all bool, operator string) (string, error) {
	rep, err := a.actions.ApproveRepairs(ctx, outboxIDs, all, action.By{Operator: operator, Audit: true})
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
	return b.String(), err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
