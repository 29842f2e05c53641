package main

import (
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// readAllocation returns the accounts (the platform's own: "") whose cycle
// --read-share stretches beyond the sweep's minimum cycle, with the cycle
// it asks for, and says so in the log. One count of payments.
func (a *app) readAllocation(pool *pgxpool.Pool, col postgres.AccountColumn, cfg sweep.Config, share float64) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	if share <= 0 {
		return out, nil
	}
	vols, err := postgres.AccountVolumes(a.ctx, pool, col, a.clock.Now().Add(-payrecon.AllocationWindow))
	if err != nil {
		return nil, err
	}
	minCycle := max(cfg.MinCycle, 0)
	var total payrecon.AllocationInput
	for _, v := range vols {
		r := payrecon.Allocate(payrecon.AllocationInput{Rows: v.Rows, Transactions: v.Recent, ReadsPerRow: cfg.Mode.ReadsPerRow(), Cycle: minCycle, Share: share})
		total.Rows += v.Rows
		total.Transactions += v.Recent
		if r.Stretched {
			out[v.Account] = r.MinCycle
			a.logger.Warn("the read allocation stretches an account's cycle (--read-share)", "account", accountLabel(v.Account),
				"rows", v.Rows, "transactions_30d", v.Recent, "allocation", r.Allocation, "min_cycle", r.MinCycle.Round(time.Second))
		}
	}
	if col.Found { // a platform's allocation is its accounts' summed
		r := payrecon.Allocate(payrecon.AllocationInput{Rows: total.Rows, Transactions: total.Transactions, ReadsPerRow: cfg.Mode.ReadsPerRow(), Cycle: minCycle, Share: share})
		if r.Stretched {
			a.logger.Warn("the platform's read allocation, summed over its accounts, is short of its accounts' cycles (--read-share)",
				"rows", total.Rows, "transactions_30d", total.Transactions, "allocation", r.Allocation, "min_cycle", r.MinCycle.Round(time.Second))
		}
	}
	return out, nil
}

// accountLabel names an account in logs and tables: "platform" for "".
func accountLabel(account string) string {
	if account == "" {
		return "platform"
	}
	return account
}
