package main

import (
	"fmt"

	"github.com/payrecon/payrecon/postgres"
)

type migrateCmd struct {
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
	if c.JSON {
		return a.printJSON(map[string]any{"applied": applied})
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
