package relay_test

import (
	"testing"

	"payrecon/internal/pgtest"
	"payrecon/relay"
)

// Every statement in queries/ prepares against the migrated schema.
func TestQueriesPrepare(t *testing.T) {
	t.Parallel()
	pgtest.CheckQueries(t, pgtest.NewDB(t), relay.Queries)
}
