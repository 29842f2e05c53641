package main

import (
	"strings"
	"testing"
)

// --notify-url needs --notify-secret: exit 2 and one line, before anything
// connects, from every command that takes them.
func TestNotifyURLNeedsASecret(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none", "PAYRECON_NOTIFY_URL": "http://127.0.0.1:9/hook"}
	for _, args := range [][]string{{"run"}, {"relay"}, {"events", "--once"}} {
		r := runCLI(t, env, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--notify-secret") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming --notify-secret", args, r.code, r.stderr)
		}
	}
	r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none"}, "relay", "--notify-url", "ftp://x", "--notify-secret", "s")
	if r.code != 2 || !strings.Contains(r.stderr, "not an http(s) URL") {
		t.Errorf("ftp URL: exit %d, stderr %q", r.code, r.stderr)
	}
}
