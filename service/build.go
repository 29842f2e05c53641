package service

import (
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
	"github.com/payrecon/payrecon/catchup"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
	"github.com/payrecon/payrecon/sweep"
)

// Parts are what the jobs of one process share: the Stripe rate budget,
// the clock, the logger, the metrics registry and the lease. New builds
// its sweep, catch-up and payouts check from them with NewSweeper,
// NewCatcher and NewPayouts, and so do the one-shot commands (scan --once,
// events --once, payouts --once): one constructor for each job.
type Parts struct {
	// Limiter is the Stripe rate budget; nil means unlimited.
	Limiter *budget.Limiter
	// Clock gives every time; nil means payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger is the process's; each job's logs carry its component. Nil
	// discards them.
	Logger *slog.Logger
	// Registerer receives the jobs' metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// LeaseFunc, when set, makes the jobs hold their lease.
	LeaseFunc payrecon.LeaseFunc
}

func (p Parts) logger(component string) *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger.With("component", component)
}

// NewSweeper builds a sweep of store's rows on gw with cfg (start from
// sweep.DefaultConfig) and the parts.
func NewSweeper(store payrecon.SweepStore, gw payrecon.Gateway, cfg sweep.Config, p Parts) (*sweep.Sweeper, error) {
	cfg.Limiter, cfg.Clock, cfg.Registerer, cfg.LeaseFunc = p.Limiter, p.Clock, p.Registerer, p.LeaseFunc
	cfg.Logger = p.logger("sweep")
	return sweep.New(store, gw, cfg)
}

// NewCatcher builds an events catch-up that lists src's events and
// processes them with proc (the webhook's processor, its source "events"),
// its cursor in pool, with cfg (start from catchup.DefaultConfig) and the
// parts.
func NewCatcher(pool *pgxpool.Pool, src payrecon.EventSource, proc payrecon.EventProcessor, cfg catchup.Config, p Parts) (*catchup.Catcher, error) {
	cfg.Limiter, cfg.Clock, cfg.Registerer, cfg.LeaseFunc = p.Limiter, p.Clock, p.Registerer, p.LeaseFunc
	cfg.Logger = p.logger("events")
	return catchup.New(src, proc, postgres.NewEventCursors(pool), cfg)
}

// PayoutsSetup is what the payouts check reads of payments: the account
// column (Connect) and the money columns, and the finding kinds ignored.
type PayoutsSetup struct {
	Accounts     postgres.AccountColumn
	MoneyColumns postgres.MoneyColumns
	Ignore       map[payrecon.Kind]bool
	// WaitForLease makes a round wait for another holder of the lease
	// (payouts --wait, and its continuous mode).
	WaitForLease bool
}

// NewPayouts builds the payouts check (reading src, judging with pc's Since
// and SettleAfter) and its store, with the parts.
func NewPayouts(pool *pgxpool.Pool, src payrecon.PayoutSource, pc PayoutsConfig, setup PayoutsSetup, p Parts) (*settlement.Reconciler, *postgres.Payouts) {
	store := postgres.NewPayouts(pool).WithAccountColumn(setup.Accounts)
	cols := setup.MoneyColumns
	if cols.Amount || cols.Currency {
		store = store.WithMoneyColumns(cols)
	}
	rec := settlement.New(src, store, settlement.Config{
		Since: pc.Since,
		Checks: payrecon.SettlementChecks{Amount: cols.Amount, Currency: cols.Currency, Ignore: setup.Ignore,
			SettleAfter: pc.SettleAfter},
		Limiter: p.Limiter, Clock: p.Clock, Logger: p.logger("payouts"), Registerer: p.Registerer,
		LeaseFunc: p.LeaseFunc, WaitForLease: setup.WaitForLease,
	})
	return rec, store
}
