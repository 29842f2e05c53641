package demo

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the demo starts (the service, the simulator, the webhook
// server, the progress monitor) is gone when Run returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
