package main

import (
	"fmt"

	"github.com/payrecon/payrecon/postgres"
)

type migrateCmd struct {
	accountColumnFlag
	JSON bool `help:"Print JSON."`
}

func (c *migrateCmd) Run(a *app) error {
	pool, err := a.openDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	applied, err := postgres.Migrate(a.ctx, pool, a.logger.With("component", "migrate"))
	if err != nil {
		return err
	}
	// Connect: the index an account's sweep walks, on the column payrecon
	// found (never added), built CONCURRENTLY like its other indexes.
	col, err := postgres.DetectAccountColumn(a.ctx, pool, c.AccountColumn)
	if err != nil {
		return err
	}
	indexed, err := postgres.EnsureAccountIndex(a.ctx, pool, col)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(map[string]any{"applied": applied, "account_index_built": indexed})
	}
	if indexed {
		fmt.Fprintf(a.stdout, "built index payments_account_id on %s (Connect: one account's rows in id order)\n", col.Column)
	}
	if len(applied) == 0 {
		fmt.Fprintln(a.stdout, "schema is current; nothing to apply")
		return nil
	}
	for _, m := range applied {
		src := m.Source
		if src == "" {
			src = fmt.Sprintf("River schema to version %d", postgres.RiverSchemaVersion)
		}
		fmt.Fprintf(a.stdout, "applied %05d %s\n", m.Version, src)
	}
	return nil
}
