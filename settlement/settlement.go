// Package settlement is the payouts check: did the money of each payment
// reach the bank? It lists Stripe's payouts (GET /v1/payouts, by created,
// 100 per request) and, for each automatic payout whose reconciliation
// completed, its balance transactions with their sources expanded (GET
// /v1/balance_transactions?payout=po_…&expand[]=data.source, 100 per
// request), records them (payrecon.SettlementStore), and judges every
// PaymentIntent they name, and every paid payment they do not, with the
// settlement rules (payrecon.SettlementChecks): settled_not_paid_locally,
// settled_amount_mismatch, paid_not_settled, each its own needs_review
// finding, healed when the drift goes.
//
// Guarantees:
//   - a payout read in full is not read again unless its status changes;
//     a line is stored once per balance transaction, however often its
//     payout is read and by however many replicas;
//   - every request waits on the shared rate budget (the sweep's
//     *budget.Limiter) and slows it down on 429;
//   - a payout is marked read only with all its lines, in one statement;
//   - a round judges every PaymentIntent of the payouts in its window and
//     every open settlement finding, so a drift that goes heals at the next
//     round even when no payout changed.
//
// Reads are made for one account: Config.Account ("" the platform's own;
// a connected account's id sends Stripe-Account with every request).
package settlement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
)

// Defaults of Config.
const (
	// JobDefault names the payouts check's lease.
	JobDefault = "payouts"
	// ConcurrencyDefault is how many payouts' lines are read at once.
	ConcurrencyDefault = 4
	// CommitBatch is how many PaymentIntents' findings one statement writes.
	CommitBatch = 1000
	pageSize    = 100
)

// Config configures a reconciler. Zero fields take the defaults.
type Config struct {
	// Account is the Stripe account read: "" the platform's own.
	Account string
	// Since is how far back payouts are listed (default
	// payrecon.DefaultPayoutsSince).
	Since time.Duration
	// Checks are the settlement rules in force: the local money columns
	// found, the kinds ignored, and SettleAfter (0: paid_not_settled off;
	// callers pass payrecon.DefaultSettleAfter unless told otherwise).
	Checks payrecon.SettlementChecks
	// Concurrency is how many payouts' lines are read at once (default
	// ConcurrencyDefault), all within Limiter.
	Concurrency int
	// Limiter is the shared Stripe rate budget; nil means unlimited.
	Limiter *budget.Limiter
	// Clock gives every time written and measured; nil means
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives progress and warnings; nil discards them.
	Logger *slog.Logger
	// LeaseFunc, when set, makes RunOnce hold the Job lease: one round at a
	// time over every process.
	LeaseFunc payrecon.LeaseFunc
	// Job names the lease (default JobDefault).
	Job string
	// WaitForLease makes RunOnce wait for another holder of the lease
	// instead of failing with payrecon.ErrLeaseHeld.
	WaitForLease bool
	// Registerer receives the check's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	if c.Since <= 0 {
		c.Since = payrecon.DefaultPayoutsSince
	}
	if c.Concurrency <= 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Job == "" {
		c.Job = JobDefault
	}
	return c
}

// Reconciler runs the payouts check for one account.
type Reconciler struct {
	source  payrecon.PayoutSource
	store   payrecon.SettlementStore
	cfg     Config
	metrics *metrics
}

// New returns a reconciler that reads from source and records in store.
func New(source payrecon.PayoutSource, store payrecon.SettlementStore, cfg Config) *Reconciler {
	cfg = cfg.withDefaults()
	return &Reconciler{source: source, store: store, cfg: cfg, metrics: newMetrics(cfg.Registerer)}
}

// Config returns the effective configuration.
func (r *Reconciler) Config() Config { return r.cfg }

// Report says what a round (or the read of one payout) did.
type Report struct {
	Account string    `json:"account"`
	Since   time.Time `json:"since"`
	// Payouts counts the payouts listed (or retrieved); Automatic and
	// Manual split them.
	Payouts   int `json:"payouts"`
	Automatic int `json:"automatic"`
	Manual    int `json:"manual"`
	// Read counts the payouts whose lines were read in this round;
	// AlreadyRead those read in full before, under the same status;
	// NotReconciled automatic payouts whose reconciliation is not
	// complete yet (read later).
	Read          int `json:"payouts_read"`
	AlreadyRead   int `json:"already_read"`
	NotReconciled int `json:"not_reconciled"`
	// Lines counts the lines read; NewLines those stored for the first
	// time.
	Lines    int `json:"lines"`
	NewLines int `json:"new_lines"`
	// Requests counts the requests made to Stripe.
	Requests int `json:"stripe_requests"`
	// Judged counts the PaymentIntents judged; Opened and Healed the
	// findings opened and healed, by kind.
	Judged int                   `json:"judged"`
	Opened map[payrecon.Kind]int `json:"opened"`
	Healed map[payrecon.Kind]int `json:"healed"`
	// Matched counts lines matched to a local row that appeared since.
	Matched int `json:"matched_lines"`
	// Duration is the whole round's; Writing the time spent recording
	// lines (while more are read), Judging the judgment's.
	Duration time.Duration `json:"duration_ns"`
	Writing  time.Duration `json:"writing_ns"`
	Judging  time.Duration `json:"judging_ns"`
}

func (r *Reconciler) newReport(now time.Time) *Report {
	return &Report{Account: r.cfg.Account, Since: now.Add(-r.cfg.Since).Truncate(time.Second),
		Opened: map[payrecon.Kind]int{}, Healed: map[payrecon.Kind]int{}}
}

// counter counts requests from several goroutines.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

// RunOnce holds the lease (with a LeaseFunc) and runs one round: `payrecon
// payouts --once`, and the periodic job of `payrecon run`.
func (r *Reconciler) RunOnce(ctx context.Context) (Report, error) {
	if r.cfg.LeaseFunc != nil {
		lease, err := r.cfg.LeaseFunc(ctx, r.cfg.Job, r.cfg.WaitForLease)
		if err != nil {
			return Report{Account: r.cfg.Account}, err
		}
		defer lease.Release(context.WithoutCancel(ctx)) //nolint:errcheck // the lock dies with the session anyway
	}
	return r.Round(ctx)
}

// Round lists the payouts created within Since, reads the lines of those
// not read in full under their current status, and judges every
// PaymentIntent of the window and every open settlement finding. It
// returns what it did, also when it stops early: a Stripe error
// (payrecon.ErrConfig for a key without Payouts: Read or Balance: Read,
// payrecon.ErrUnavailable after the retries) or a database error; what was
// recorded before stays recorded, and the next round goes on from there.
func (r *Reconciler) Round(ctx context.Context) (Report, error) {
	start := r.cfg.Clock.Now()
	rep := r.newReport(start)
	var reqs counter
	err := r.round(ctx, rep, &reqs, start)
	rep.Requests = reqs.n
	rep.Duration = r.cfg.Clock.Now().Sub(start)
	r.metrics.observe(rep, err)
	return *rep, err
}

func (r *Reconciler) round(ctx context.Context, rep *Report, reqs *counter, now time.Time) error {
	var toRead []payrecon.Payout
	q := payrecon.PayoutQuery{Account: r.cfg.Account, CreatedGTE: rep.Since, Limit: pageSize}
	for {
		if err := r.wait(ctx); err != nil {
			return err
		}
		reqs.add()
		page, err := r.source.ListPayouts(ctx, q)
		if err = r.answered(err); err != nil {
			return err
		}
		ids, err := r.store.SavePayouts(ctx, page.Payouts, r.cfg.Clock.Now())
		if err != nil {
			return err
		}
		for _, p := range page.Payouts {
			rep.Payouts++
			switch {
			case !p.Automatic:
				rep.Manual++
				continue
			case !p.Itemisable():
				rep.NotReconciled++
			case slices.Contains(ids, p.ID):
				toRead = append(toRead, p)
			default:
				rep.AlreadyRead++
			}
			rep.Automatic++
		}
		if !page.HasMore || len(page.Payouts) == 0 {
			break
		}
		q.StartingAfter = page.Payouts[len(page.Payouts)-1].ID
	}
	if err := r.readAll(ctx, rep, reqs, toRead); err != nil {
		return err
	}
	return r.judge(ctx, rep, payrecon.SettlementScope{Account: r.cfg.Account, Since: rep.Since, SettleAfter: r.cfg.Checks.SettleAfter, Now: now})
}

// writeBatchLines bounds how many lines one transaction writes: the
// writer takes whatever payouts are read when it is free, up to this.
const writeBatchLines = 5000

// readAll reads the lines of payouts, Concurrency payouts at a time, and
// one writer records them: each payout with all its lines, several payouts
// per transaction when the readers are ahead.
func (r *Reconciler) readAll(ctx context.Context, rep *Report, reqs *counter, payouts []payrecon.Payout) error {
	g, gctx := errgroup.WithContext(ctx)
	read := make(chan payrecon.PayoutLines, r.cfg.Concurrency)
	g.Go(func() error {
		defer close(read)
		rg, rctx := errgroup.WithContext(gctx)
		rg.SetLimit(r.cfg.Concurrency)
		for _, p := range payouts {
			rg.Go(func() error {
				lines, err := r.readLines(rctx, reqs, p)
				if err != nil {
					return err
				}
				select {
				case read <- payrecon.PayoutLines{Payout: p, Lines: lines}:
					return nil
				case <-rctx.Done():
					return rctx.Err()
				}
			})
		}
		return rg.Wait()
	})
	g.Go(func() error {
		var (
			batch []payrecon.PayoutLines
			n     int
		)
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			start := r.cfg.Clock.Now()
			fresh, err := r.store.SavePayoutLines(gctx, batch, start)
			rep.Writing += r.cfg.Clock.Now().Sub(start)
			if err != nil {
				return err
			}
			rep.Read += len(batch)
			rep.Lines += n
			rep.NewLines += fresh
			batch, n = batch[:0], 0
			return nil
		}
		for pl := range read {
			batch = append(batch, pl)
			n += len(pl.Lines)
			if n >= writeBatchLines || len(read) == 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return flush()
	})
	return g.Wait()
}

// readLines reads every line of one payout.
func (r *Reconciler) readLines(ctx context.Context, reqs *counter, p payrecon.Payout) ([]payrecon.PayoutLine, error) {
	var lines []payrecon.PayoutLine
	q := payrecon.PayoutLineQuery{Account: p.Account, PayoutID: p.ID, Limit: pageSize}
	for {
		if err := r.wait(ctx); err != nil {
			return nil, err
		}
		reqs.add()
		page, err := r.source.ListPayoutLines(ctx, q)
		if err = r.answered(err); err != nil {
			return nil, err
		}
		lines = append(lines, page.Lines...)
		if !page.HasMore || len(page.Lines) == 0 {
			return lines, nil
		}
		q.StartingAfter = page.Lines[len(page.Lines)-1].ID
	}
}

// ReadPayout reads one payout at once (a payout.* event): the payout, its
// lines when it can be itemised and they were not read under its status,
// and the judgment of the PaymentIntents its lines name.
func (r *Reconciler) ReadPayout(ctx context.Context, account, id string) (Report, error) {
	start := r.cfg.Clock.Now()
	rep := r.newReport(start)
	rep.Account = account
	var reqs counter
	err := r.readPayout(ctx, rep, &reqs, account, id, start)
	rep.Requests = reqs.n
	rep.Duration = r.cfg.Clock.Now().Sub(start)
	r.metrics.observe(rep, err)
	return *rep, err
}

func (r *Reconciler) readPayout(ctx context.Context, rep *Report, reqs *counter, account, id string, now time.Time) error {
	if err := r.wait(ctx); err != nil {
		return err
	}
	reqs.add()
	p, err := r.source.RetrievePayout(ctx, account, id)
	if err = r.answered(err); err != nil {
		return err
	}
	rep.Payouts++
	ids, err := r.store.SavePayouts(ctx, []payrecon.Payout{p}, r.cfg.Clock.Now())
	if err != nil {
		return err
	}
	switch {
	case !p.Automatic:
		rep.Manual++
		return nil
	case !p.Itemisable():
		rep.Automatic++
		rep.NotReconciled++
		return nil
	}
	rep.Automatic++
	if len(ids) == 0 {
		rep.AlreadyRead++
	} else if err := r.readAll(ctx, rep, reqs, []payrecon.Payout{p}); err != nil {
		return err
	}
	return r.judge(ctx, rep, payrecon.SettlementScope{Account: account, PayoutID: id, SettleAfter: r.cfg.Checks.SettleAfter, Now: now})
}

// judge runs the settlement rules over the scope and writes what changed:
// findings of new drifts, healings of drifts that went, lines matched to a
// local row that appeared. Only PaymentIntents with a drift, an open
// finding or an unmatched line are written, after the scope was read (one
// connection at a time).
func (r *Reconciler) judge(ctx context.Context, rep *Report, scope payrecon.SettlementScope) error {
	start := r.cfg.Clock.Now()
	defer func() { rep.Judging += r.cfg.Clock.Now().Sub(start) }()
	var todo []payrecon.SettlementJudgment
	err := r.store.SettlementInputs(ctx, scope, func(row payrecon.SettlementRow) error {
		rep.Judged++
		j := r.cfg.Checks.Judge(row.Input)
		if len(j.Drifts) > 0 || len(row.Open) > 0 || row.Unmatched {
			todo = append(todo, j)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(todo, CommitBatch) {
		res, err := r.store.CommitSettlement(ctx, chunk, r.cfg.Clock.Now())
		if err != nil {
			return err
		}
		for k, n := range res.Opened {
			rep.Opened[k] += n
		}
		for k, n := range res.Healed {
			rep.Healed[k] += n
		}
		rep.Matched += res.Matched
	}
	return nil
}

// wait takes a token of the shared budget.
func (r *Reconciler) wait(ctx context.Context) error {
	if r.cfg.Limiter == nil {
		return nil
	}
	return r.cfg.Limiter.Wait(ctx)
}

// answered tells the shared limiter how Stripe answered and returns err.
func (r *Reconciler) answered(err error) error {
	if r.cfg.Limiter == nil {
		return err
	}
	var ue *payrecon.UnavailableError
	switch {
	case err == nil:
		r.cfg.Limiter.OnSuccess()
	case errors.As(err, &ue) && ue.RateLimited:
		r.cfg.Limiter.OnRateLimited(ue.RetryAfter)
	}
	return err
}

// Describe is one line saying what a report did, for logs and the CLI.
func (rep Report) Describe() string {
	return fmt.Sprintf("%d payouts (%d automatic, %d manual), %d read (%d lines, %d new), %d already read, %d awaiting Stripe's reconciliation; %d PaymentIntents judged; findings opened %d, healed %d; %d Stripe requests",
		rep.Payouts, rep.Automatic, rep.Manual, rep.Read, rep.Lines, rep.NewLines, rep.AlreadyRead, rep.NotReconciled,
		rep.Judged, sum(rep.Opened), sum(rep.Healed), rep.Requests)
}

func sum(m map[payrecon.Kind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
