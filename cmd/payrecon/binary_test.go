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

// binary builds cmd/payrecon once per test process and returns its path,
// for the tests and benchmarks that run the real binary.
func binary(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "payrecon-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "payrecon")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
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
