package console_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test left a goroutine running: every service a
// test starts, and every browser, is stopped with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx pools of finished tests close their connections asynchronously.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
	)
}
