package service

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/settlement"
)

// PayoutsConfig configures the payouts check of the service.
type PayoutsConfig struct {
	// Interval is how often a payouts round runs (a River periodic job, on
	// one replica at a time); 0 turns the check off, payout events'
	// reads included (--payouts-interval).
	Interval time.Duration
	// Since is how far back payouts are listed (default
	// payrecon.DefaultPayoutsSince).
	Since time.Duration
	// SettleAfter is --settle-after; 0 turns paid_not_settled off.
	SettleAfter time.Duration
	// Source, when set, is what payouts are read from instead of the
	// Stripe gateway.
	Source payrecon.PayoutSource
}

// newPayouts builds the payouts check on the service's limiter, clock and
// registry when it is on, and returns the relay's jobs for it; nil when it
// is off.
func (s *Service) newPayouts(pool *pgxpool.Pool, gw payrecon.Gateway) (*settlement.Reconciler, error) {
	pc := s.cfg.Payouts
	if pc.Interval <= 0 {
		return nil, nil
	}
	src := pc.Source
	if src == nil {
		ps, ok := gw.(payrecon.PayoutSource)
		if !ok {
			return nil, errors.New("the payouts check needs a Stripe gateway that reads payouts")
		}
		src = ps
	}
	rec, _ := NewPayouts(pool, src, pc, PayoutsSetup{Accounts: s.cfg.Accounts, MoneyColumns: s.cfg.MoneyColumns,
		Ignore: s.cfg.Sweep.Money.Ignore}, s.parts(nil))
	s.registry.MustRegister(postgres.NewPayoutsCollector(pool, rec.Config().Since, s.cfg.Clock, s.cfg.Logger.With("component", "metrics")))
	return rec, nil
}
