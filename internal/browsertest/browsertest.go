// Package browsertest starts a real headless Chromium for tests (chromedp).
// Without Chromium the tests skip, unless PAYRECON_REQUIRE_CHROMIUM=1 (set by
// scripts/test, so CI never skips them): then they fail.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path finds Chromium, or "" when it is not installed.
func Path() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts Chromium in a fresh profile at width × height and returns a
// tab's context, which ends after timeout; the browser stops with the test.
func New(t testing.TB, width, height int, timeout time.Duration) context.Context {
	t.Helper()
	path := Path()
	if path == "" {
		if os.Getenv("PAYRECON_REQUIRE_CHROMIUM") != "" {
			t.Fatal("Chromium is not installed and PAYRECON_REQUIRE_CHROMIUM is set: apt-get install -y chromium (scripts/test does)")
		}
		t.Skip("Chromium is not installed (apt-get install -y chromium); set PAYRECON_REQUIRE_CHROMIUM=1 to fail instead")
	}
	// The flags keep a headless Chromium off the network: this machine's
	// closed network refuses Google's hosts, and Chromium would wait on them.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	// The first call starts the browser, which lives as long as the
	// context of that call: no timeout on it, only on what follows.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", path, err)
	}
	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancelTimeout)
	return tctx
}
