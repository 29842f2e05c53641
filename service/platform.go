package service

import (
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/platform"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/stripeapi"
	"github.com/payrecon/payrecon/sweep"
)

// newPlatform builds the account sweeps of a platform on Connect: the same
// store, sweep settings and events processor as the single sweep, with a
// gateway per account.
func (s *Service) newPlatform(pool *pgxpool.Pool, store *postgres.Store, gw payrecon.Gateway, proc payrecon.EventProcessor) (*platform.Platform, error) {
	cfg := s.cfg
	gwFunc := cfg.AccountGateway
	var srcFunc platform.EventSourceFunc
	if sg, ok := gw.(*stripeapi.Gateway); ok {
		if gwFunc == nil {
			gwFunc = func(account string, onRateLimited func(time.Duration)) payrecon.Gateway {
				return sg.ForAccount(account, onRateLimited)
			}
		}
		srcFunc = func(account string, onRateLimited func(time.Duration)) payrecon.EventSource {
			return sg.ForAccount(account, onRateLimited)
		}
	}
	if gwFunc == nil {
		return nil, errors.New("a platform's account sweeps need the Stripe gateway (or Config.AccountGateway)")
	}
	sc := cfg.Sweep
	if sc.Job == "" {
		sc.Job = sweep.DefaultJob
	}
	ec := cfg.Events
	if srcFunc == nil {
		ec.Interval = 0
	}
	return platform.New(platform.Config{
		Job: sc.Job, Accounts: cfg.Accounts, Store: store, Gateway: gwFunc, Sweep: sc,
		RPS: cfg.RPS, PlatformRPS: cfg.PlatformRPS, MinCycles: cfg.MinCycles,
		Events: ec, Source: srcFunc, Processor: proc, Pool: pool,
		FatalFunc: func(err error) {
			select {
			case s.fatal <- err:
			default:
			}
		},
		Clock: cfg.Clock, Logger: cfg.Logger.With("component", "platform"),
	})
}
