// Package postgres is payrecon's PostgreSQL adapter: the embedded schema
// migrations (goose, with River's schema as one pinned Go migration), the
// sweep's store, the per-job lease, the canonical writer, the webhook's
// event store and the monitoring queries. All runtime SQL lives in
// queries/*.sql, one statement per file, named after the file, with named
// parameters (@name, bound with pgx.StrictNamedArgs, which refuses a missing or extra one).
package postgres

import (
	"embed"

	"github.com/payrecon/payrecon/internal/sqlq"
)

//go:embed queries/*.sql
var queryFiles embed.FS

// queries are the package's statements, by file name.
var queries = sqlq.New("postgres", queryFiles, "queries")
