package main

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
)

// repairModeFlag is --repair-mode, on every command that decides on
// repairs or applies events: scan, run (its sweep, webhooks, catch-up and
// console rechecks), events, findings recheck.
type repairModeFlag struct {
	RepairMode string `name:"repair-mode" env:"PAYRECON_REPAIR_MODE" enum:"apply,review,off" default:"apply" help:"What becomes of repairs: apply (queue and apply them), review (record and queue them, held until approved with payrecon repairs approve or the console; events that would move a payment are held the same way), off (findings only: nothing queued, no event moves a payment)."`
}

// mode is the flag's value (kong has checked it is one of the three).
func (f repairModeFlag) mode() payrecon.RepairMode {
	m, err := payrecon.ParseRepairMode(f.RepairMode)
	if err != nil {
		return payrecon.RepairModeDefault // unreachable: kong's enum
	}
	return m
}

// reviewStore is the sweep's store in repair mode m: its repair commands get
// their River delivery job in the batch's own transaction, pending (held
// for approval) under review, none under off.
func (a *app) reviewStore(pool *pgxpool.Pool, m payrecon.RepairMode) (*postgres.Store, error) {
	rl, err := a.insertOnlyRelay(pool)
	if err != nil {
		return nil, err
	}
	store := postgres.NewStore(pool)
	store.EnqueueFunc, store.HoldFunc, store.RepairMode = rl.EnqueueFunc(), rl.HoldFunc(), m
	return store, nil
}
