package postgres_test

import (
	"testing"

	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
)

// Every statement in queries/ prepares against the migrated schema (each
// of a file of several on its own), and so does every prune template as
// filled in for each prune target (its batch and its dry-run count, with
// the target's keep rule).
func TestQueriesPrepare(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewDB(t)
	pgtest.CheckQueries(t, pool, postgres.Queries)
	prune := map[string]string{}
	for _, tg := range postgres.PruneTargets() {
		batch, count, err := postgres.PruneStatements(tg)
		if err != nil {
			t.Fatalf("prune target %s: %v", tg.Name, err)
		}
		prune["prune batch of "+tg.Name], prune["prune count of "+tg.Name] = batch, count
	}
	if len(prune) == 0 {
		t.Fatal("no prune targets")
	}
	pgtest.CheckStatements(t, pool, prune)
}
