// Package simtest starts the Stripe simulator for tests and benchmarks. It
// lives apart from stripesim so that the production binary, which embeds
// the simulator for `payrecon demo`, does not link package testing.
package simtest

import (
	"testing"

	"github.com/payrecon/payrecon/stripesim"
)

// Start starts a simulator, fails tb at once if it cannot start, and closes
// it in tb.Cleanup.
func Start(tb testing.TB, cfg stripesim.Config) *stripesim.Server {
	tb.Helper()
	s, err := stripesim.Start(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}
