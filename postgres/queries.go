// Package postgres is payrecon's PostgreSQL adapter: the embedded schema
// migrations (goose, with River's schema as one pinned Go migration), the
// sweep's store, the per-job lease, the canonical writer and the monitoring
// queries. All runtime SQL lives in queries/*.sql, one statement per file,
// named after the file.
package postgres

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed queries/*.sql
var queryFiles embed.FS

// query returns the embedded statement queries/<name>.sql. A missing name is
// a programming error caught by every test that runs the statement.
func query(name string) string {
	b, err := queryFiles.ReadFile("queries/" + name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("postgres: no query %q: %v", name, err))
	}
	return strings.TrimSpace(string(b))
}
