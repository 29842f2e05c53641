package sweep_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: the sweep starts one per Stripe
// call, and a lease holds a connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
