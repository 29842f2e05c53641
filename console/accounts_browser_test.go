package console_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/payrecon/payrecon/internal/browsertest"
)

// The Accounts pages in a real Chromium, on a platform on Connect: from
// the overview's accounts card to the Accounts page, to an account's page,
// to its findings; none wider than the viewport, on a desktop and a phone.
// With PAYRECON_SCREENSHOTS_DIR set (scripts/screenshots) their
// screenshots are written there.
func TestAccountsScreenshots(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("PAYRECON_SCREENSHOTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	admin := startPlatform(t)
	ctx := browsertest.New(t, 1280, 800, 2*time.Minute)

	run(t, ctx, "the overview's accounts card to the Accounts page",
		chromedp.Navigate(admin+"/console/"), chromedp.WaitVisible(css("nav")),
		chromedp.Click(css(`dd.big a[href="/console/accounts"]`)), chromedp.WaitVisible(css(`table a[href="/console/accounts/acct_1ConsoleA"]`)))
	run(t, ctx, "the Accounts page to an account's page",
		chromedp.Click(css(`table a[href="/console/accounts/acct_1ConsoleA"]`)), chromedp.WaitVisible(css("#findings-h")))
	if h := text(t, ctx, "h1"); !strings.Contains(h, "acct_1ConsoleA") {
		t.Errorf("the account page's heading is %q", h)
	}
	run(t, ctx, "an account's page to its findings",
		chromedp.Click(css(`a[href="/console/findings?account=acct_1ConsoleA"]`)), chromedp.WaitVisible(css("table.findings")))
	if body := text(t, ctx, "table.findings"); !strings.Contains(body, "pi_ConsoleA_review_0") || !strings.Contains(body, "pi_ConsoleA_review_1") {
		t.Errorf("the account's findings:\n%s", body)
	}

	for _, s := range []struct {
		name, path string
		w, h       int
		wait       string
	}{
		{"accounts", "/console/accounts", 1280, 800, "table"},
		{"account", "/console/accounts/acct_1ConsoleA", 1280, 800, "#findings-h"},
		{"account-phone", "/console/accounts/acct_1ConsoleA", 390, 844, "#findings-h"},
	} {
		var img []byte
		run(t, ctx, "screenshot "+s.name,
			chromedp.EmulateViewport(int64(s.w), int64(s.h)),
			chromedp.Navigate(admin+s.path),
			chromedp.WaitVisible(css(s.wait)),
			chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
				var err error
				img, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
				return err
			}),
		)
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil {
			t.Fatalf("%s: not a PNG: %v", s.name, err)
		}
		if cfg.Width != s.w {
			t.Errorf("%s: %d×%d, want %d wide", s.name, cfg.Width, cfg.Height, s.w)
		}
		sw, err := chromedp.Run(ctx, chromedp.Evaluate[int]("document.documentElement.scrollWidth"))
		if err != nil || sw > s.w {
			t.Errorf("%s: the page is %d wide at a %d viewport (%v)", s.name, sw, s.w, err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name+".png"), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
