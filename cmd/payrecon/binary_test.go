package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// Stamped into the test binary as a release would be (scripts/image does
// the same from git).
const (
	testVersion  = "v0.0.0-test"
	testRevision = "0123456789abcdef0123456789abcdef01234567"
)

// binary builds cmd/payrecon once per test process and returns its path,
// for the tests and benchmarks that run the real binary. It is static
// (CGO_ENABLED=0), as in the container image, which TestImage builds from
// it.
func binary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "payrecon-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "payrecon")
		cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+testVersion+" -X main.revision="+testRevision, "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = err
			tb.Logf("go build: %s", out)
		}
	})
	if binErr != nil {
		tb.Fatalf("build payrecon: %v", binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if code == 0 {
		// run() in-process starts the whole service: it must stop all of it.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
