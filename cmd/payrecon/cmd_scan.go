package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// sweepFlags tune the sweep (scan and run).
type sweepFlags struct {
	jobFlag
	Batch int           `default:"200" help:"Rows per batch (one transaction per batch)."`
	Grace time.Duration `default:"10m" help:"Rows changed more recently than this are in_flight: a webhook is probably on its way."`
	rpsFlag
	Concurrency int `default:"8" help:"Stripe calls in flight at most."`
	sweepModeFlag
	ListSkew  time.Duration `name:"list-skew" default:"1m" help:"List mode: widen each batch's creation-time window by this much for clock skew."`
	MaxOutage time.Duration `name:"max-outage" default:"5m" help:"Give up after Stripe has been failing systemically for this long."`
	// LeaseTimeout is shared with the events catch-up (leaseTimeoutFlag).
	leaseTimeoutFlag
	repairModeFlag
	VerifiedRefresh time.Duration `name:"verified-refresh" env:"PAYRECON_VERIFIED_REFRESH" default:"24h" help:"A verified row whose Stripe status did not change gets observed_external_status and last_reconciled_at written at most once per this long, spread over the cycles (its verification is recorded per batch in payrecon's own table); 0 writes every verified row."`
	StuckAfter      string        `name:"stuck-after" env:"PAYRECON_STUCK_AFTER" default:"${stuck_after_default}" help:"A row observed continuously in one in-flight Stripe status longer than its limit gets a stuck_in_flight finding (status=duration,…; off: never)."`
	PlatformRPS     float64       `name:"platform-rps" env:"PAYRECON_PLATFORM_RPS" default:"50" help:"Connect (--account-column): Stripe requests per second summed over every account and every replica; --rps is then each account's budget. 0: no cap."`
	readShareFlag
	moneyFlags
}

// leaseTimeoutFlag is --lease-timeout (scan, run, events).
type leaseTimeoutFlag struct {
	LeaseTimeout time.Duration `name:"lease-timeout" env:"PAYRECON_LEASE_TIMEOUT" default:"30s" help:"A standby takes a job's lease over when its holder's last heartbeat (every third of this) is older than this: a frozen holder (SIGSTOP, a paused VM) stops the sweep for at most this long. A holder that died loses it at once."`
}

// check validates --lease-timeout.
func (f leaseTimeoutFlag) check() error {
	if f.LeaseTimeout < time.Second {
		return usageError{fmt.Errorf("--lease-timeout must be at least 1s, got %s", f.LeaseTimeout)}
	}
	return nil
}

func (f sweepFlags) config() (sweep.Config, error) {
	mode, err := sweep.ParseMode(f.Mode)
	if err != nil {
		return sweep.Config{}, usageError{err}
	}
	cfg := sweep.Config{
		Job: f.Job, Batch: f.Batch, Grace: f.Grace, Concurrency: f.Concurrency, MaxOutage: f.MaxOutage,
		Mode: mode, ListSkew: f.ListSkew,
	}
	if err := f.leaseTimeoutFlag.check(); err != nil {
		return cfg, err
	}
	if f.ReadShare < 0 || f.ReadShare > 1 {
		return cfg, usageError{fmt.Errorf("--read-share must be between 0 and 1, got %g", f.ReadShare)}
	}
	if f.PlatformRPS < 0 {
		return cfg, usageError{fmt.Errorf("--platform-rps must not be negative, got %g (0 means no cap)", f.PlatformRPS)}
	}
	if f.Batch <= 0 {
		return cfg, usageError{fmt.Errorf("--batch must be positive, got %d", f.Batch)}
	}
	if f.Concurrency <= 0 {
		return cfg, usageError{fmt.Errorf("--concurrency must be positive, got %d", f.Concurrency)}
	}
	if err := checkName("--job", f.Job); err != nil {
		return cfg, err
	}
	if err := checkFinite("--rps", f.RPS, false); err != nil { // 0 means unlimited; NaN and Inf mean nothing
		return cfg, err
	}
	if err := checkPositiveDuration("--list-skew", f.ListSkew); err != nil {
		return cfg, err
	}
	if err := checkPositiveDuration("--max-outage", f.MaxOutage); err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{err}
	}
	if f.Grace < 0 {
		return cfg, usageError{fmt.Errorf("--grace must not be negative, got %s", f.Grace)}
	}
	if f.Grace == 0 {
		cfg.Grace = -1 // --grace 0: no window (a zero Config field would mean the default)
	}
	if err := checkNonNegativeDuration("--verified-refresh", f.VerifiedRefresh); err != nil {
		return cfg, err
	}
	cfg.VerifiedRefresh = f.VerifiedRefresh
	if f.VerifiedRefresh == 0 {
		cfg.VerifiedRefresh = -1 // --verified-refresh 0: write every verified row
	}
	if cfg.Money.Ignore, err = f.ignore(); err != nil {
		return cfg, err
	}
	if cfg.IntentMetadata, err = f.metadata(); err != nil {
		return cfg, err
	}
	if cfg.StuckAfter, err = payrecon.ParseStuckAfter(f.StuckAfter); err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// withMoney detects the money columns (logging once which checks are off)
// and the session column, and returns the store that reads them and the
// sweep configuration that judges them.
func (a *app) withMoney(pool *pgxpool.Pool, store *postgres.Store, cfg sweep.Config, f moneyFlags) (*postgres.Store, sweep.Config, postgres.MoneyColumns, error) {
	cols, err := a.moneyColumns(pool, f.moneyColumnFlags)
	if err != nil {
		return nil, cfg, cols, err
	}
	cfg.Money = cols.Checks(cfg.Money.Ignore)
	sessions, err := a.sessionColumn(pool, f.sessionColumnFlag)
	if err != nil {
		return nil, cfg, cols, err
	}
	return store.WithMoneyColumns(cols).WithSessionColumn(sessions), cfg, cols, nil
}

type scanCmd struct {
	stripeFlags
	sweepFlags
	Once    bool   `help:"Sweep from the job's cursor until it wraps (on a fresh job: every row once), recheck rows Stripe could not answer for, and exit. Connect (--account-column): every account's job, each until it wraps."`
	Account string `placeholder:"acct_…" help:"Connect: sweep only this account's job (\"platform\" for the platform's own rows)."`
	Wait    bool   `help:"When another process holds the job's lease, wait for it instead of exiting with status 3."`
	JSON    bool   `help:"Print the summary as JSON."`
	// CPUProfile names where a Go CPU profile of the whole command is
	// written (go tool pprof reads it), to find what a sweep spends its CPU
	// on without rebuilding the binary.
	CPUProfile string `name:"cpu-profile" placeholder:"FILE" type:"path" help:"Write a CPU profile of this scan to FILE (for go tool pprof); the file is complete when scan exits."`
}

func leaseFunc(pool *pgxpool.Pool, timeout time.Duration) payrecon.LeaseFunc {
	return func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLeaseTimeout(ctx, pool, job, wait, timeout)
	}
}

func (c *scanCmd) Run(a *app) error {
	cfg, err := c.sweepFlags.config()
	if err != nil {
		return err
	}
	if c.CPUProfile != "" {
		stop, err := startCPUProfile(c.CPUProfile)
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				a.logger.Error("cpu profile not written", "file", c.CPUProfile, "error", err)
			}
		}()
	}
	cfg.WaitForLease = c.Wait
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
	if err := a.checkStripe(gw); err != nil {
		return err
	}
	store, err := a.reviewStore(pool, c.mode())
	if err != nil {
		return err
	}
	if store, cfg, _, err = a.withMoney(pool, store, cfg, c.moneyFlags); err != nil {
		return err
	}
	accounts, err := a.accountColumn(pool, c.accountColumnFlag)
	if err != nil {
		return err
	}
	if c.Account != "" && !accounts.Found {
		return usageError{fmt.Errorf("--account %s: payments has no account column (%s)", c.Account, accounts.Problem)}
	}
	cfg.Limiter, cfg.Logger, cfg.LeaseFunc = limiter, a.logger.With("component", "sweep"), leaseFunc(pool, c.LeaseTimeout)
	if accounts.Found {
		if !c.Once {
			return usageError{errors.New("a platform's accounts (--account-column) are swept continuously by `payrecon run`, spread over its replicas; scan sweeps them with --once")}
		}
		return c.runAccounts(a, pool, store, gw, cfg, accounts)
	}
	s := sweep.New(store, gw, cfg)

	if !c.Once {
		a.logger.Info("sweeping continuously; stop with Ctrl-C", "job", cfg.Job, "rps", c.RPS, "repair_mode", c.mode())
		return s.Run(a.ctx, nil)
	}

	prog := a.newProgress(pool, cfg.Job)
	rep, err := s.RunCycle(a.ctx, prog.update)
	prog.done()
	if err != nil {
		if errors.Is(err, payrecon.ErrLeaseHeld) {
			return fmt.Errorf("%w: wait for it with --wait, or stop the other sweeper", err)
		}
		return err
	}
	if c.JSON {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		printCycle(a, rep, c.mode())
	}
	if rep.StillUnverifiable > 0 {
		return incompleteError{fmt.Errorf("%d rows could not be verified (Stripe unavailable for them); they stay queued for recheck", rep.StillUnverifiable)}
	}
	return nil
}

// startCPUProfile starts profiling the process's CPU into path; stop ends
// it and closes the file. A file that cannot be created is a usage error
// (exit 2, nothing swept).
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("--cpu-profile: %w", err)}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func printCycle(a *app, rep sweep.CycleReport, mode payrecon.RepairMode) {
	fmt.Fprintf(a.stdout, "job %s: cycle complete in %s\n", rep.Job, payrecon.FormatDuration(rep.Duration))
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "rows scanned\t%d\t\n", rep.Scanned)
	if rep.Rechecked > 0 {
		fmt.Fprintf(tw, "rows rechecked\t%d\t\n", rep.Rechecked)
	}
	for _, v := range payrecon.Verdicts {
		fmt.Fprintf(tw, "%s\t%d\t\n", v, rep.Counts[v])
	}
	fmt.Fprintf(tw, "verified\t%d\t\n", rep.Verified)
	fmt.Fprintf(tw, "new findings\t%d\t\n", rep.NewFindings)
	fmt.Fprintf(tw, "findings resolved\t%d\t\n", rep.Resolved)
	switch {
	case mode.Holds():
		fmt.Fprintf(tw, "repair commands held for review\t%d\t\n", rep.Commands)
	case mode.Queues():
		fmt.Fprintf(tw, "repair commands queued\t%d\t\n", rep.Commands)
	default:
		fmt.Fprintf(tw, "repair commands queued\t0\t(--repair-mode off)\n")
	}
	fmt.Fprintf(tw, "Stripe requests\t%d\t\n", rep.StripeCalls)
	if rep.Pauses > 0 {
		fmt.Fprintf(tw, "outage pauses\t%d\t\n", rep.Pauses)
	}
	if rep.ConcurrentRuns > 0 {
		fmt.Fprintf(tw, "batches lost to a concurrent run\t%d\t\n", rep.ConcurrentRuns)
	}
	fmt.Fprintf(tw, "still unverifiable\t%d\t\n", rep.StillUnverifiable)
	_ = tw.Flush()
	if mode.Holds() && rep.Commands > 0 {
		fmt.Fprintln(a.stdout, "nothing was repaired: see `payrecon repairs list`, approve with `payrecon repairs approve ID…` or `--all`")
	}
}

// progress shows a bar on a terminal and a log line every few seconds
// otherwise.
type progress struct {
	a       *app
	bar     *mpb.Bar
	p       *mpb.Progress
	total   int64
	lastLog time.Time
}

func (a *app) newProgress(pool *pgxpool.Pool, job string) *progress {
	pr := &progress{a: a, lastLog: time.Now()}
	// Rows ahead of the cursor: what this cycle has left to do. Without the
	// figure the bar still counts; the sweep itself reports any real fault.
	pr.total, _ = postgres.NewStore(pool).RowsAhead(a.ctx, job)
	if isTerminal(a.stderr) {
		pr.p = mpb.NewWithContext(a.ctx, mpb.WithOutput(a.stderr), mpb.WithWidth(48))
		pr.bar = pr.p.AddBar(pr.total,
			mpb.PrependDecorators(decor.Name("sweep "+job+" "), decor.CountersNoUnit("%d / %d")),
			mpb.AppendDecorators(decor.Percentage(), decor.Name(" "), decor.AverageSpeed(0, "%.0f rows/s")),
		)
	}
	return pr
}

func (pr *progress) update(b sweep.BatchReport, total sweep.CycleReport) {
	if pr.bar != nil {
		pr.bar.IncrBy(b.Scanned)
		return
	}
	if time.Since(pr.lastLog) >= 5*time.Second || b.Wrapped {
		pr.lastLog = time.Now()
		pr.a.logger.Info("sweep progress", "job", total.Job, "scanned", total.Scanned, "of", pr.total,
			"new_findings", total.NewFindings, "unverifiable", total.Counts[payrecon.Unverifiable])
	}
}

func (pr *progress) done() {
	if pr.p != nil {
		pr.bar.SetTotal(-1, true)
		pr.p.Wait()
	}
}
