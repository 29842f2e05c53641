package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/stripesim"
)

// previousRelease is the commit of the release before this one (CHANGELOG:
// 0.2.0). TestPreviousReleaseKeepsSweeping builds its binary.
const previousRelease = "29a3ed5"

var (
	releaseOnce sync.Once
	releasePath string
	releaseErr  error
)

// errNoRelease: the commit is not in this clone (a shallow clone).
var errNoRelease = errors.New("the previous release's commit is not in this clone")

// releaseBinary builds payrecon at commit, once per machine: the binary is
// kept in the user's cache folder under the commit's full hash, so later
// runs (and CI with a cached home) only look it up. The source comes from
// `git archive`, extracted into a temporary folder; the build shares the
// Go build cache, so only the packages that differ are compiled.
func releaseBinary(t *testing.T, commit string) string {
	t.Helper()
	releaseOnce.Do(func() { releasePath, releaseErr = buildRelease(commit) })
	if errors.Is(releaseErr, errNoRelease) {
		t.Skipf("%v (%s): fetch the full history (git fetch --unshallow) to run this test", releaseErr, commit)
	}
	if releaseErr != nil {
		t.Fatalf("build the previous release %s: %v", commit, releaseErr)
	}
	return releasePath
}

func buildRelease(commit string) (string, error) {
	full, err := exec.Command("git", "rev-parse", "--verify", "--quiet", commit+"^{commit}").Output()
	if err != nil {
		return "", errNoRelease
	}
	hash := strings.TrimSpace(string(full))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "payrecon-test", "release-"+hash)
	bin := filepath.Join(dir, "payrecon")
	if fi, err := os.Stat(bin); err == nil && fi.Mode()&0o111 != 0 {
		return bin, nil
	}
	src, err := os.MkdirTemp("", "payrecon-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	// From the top: in a subfolder, git archive keeps only that subfolder.
	git := exec.Command("git", "archive", "--format=tar", hash)
	git.Dir = strings.TrimSpace(string(top))
	archive, err := git.Output()
	if err != nil {
		return "", fmt.Errorf("git archive %s: %w", hash, err)
	}
	if err := untar(bytes.NewReader(archive), src); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := bin + fmt.Sprintf(".%d", os.Getpid())
	build := exec.Command("go", "build", "-o", tmp, "./cmd/payrecon")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin) // atomic: a concurrent builder's binary is the same
}

func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("archive entry %q leaves the folder", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

// startRelease starts the previous release's `payrecon run` and returns the
// function that stops it with SIGTERM and checks it exited 0.
func startRelease(t *testing.T, bin string, env map[string]string) (stop func()) {
	t.Helper()
	run := exec.Command(bin, "run", "--http-addr", freeAddr(t), "--admin-addr", freeAddr(t), "--grace", "0", "--min-cycle", "1s",
		"--events-interval", "0", "--workers", "2", "--log-format", "json")
	run.Env = envList(env)
	var logs syncBuffer
	run.Stdout, run.Stderr = &logs, &logs
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			_ = run.Process.Kill()
			<-exited
		})
	})
	return func() {
		t.Helper()
		once.Do(func() {
			if err := run.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := <-exited; err != nil {
				t.Fatalf("the previous release's run exited with %v after SIGTERM\n%s", err, logs.String())
			}
		})
	}
}

// runRelease runs the previous release's binary to completion.
func runRelease(t *testing.T, bin string, env map[string]string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = envList(env)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func envList(env map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// Upgrading while the previous release keeps running: its schema is
// migrated by this release's `migrate` under a live `payrecon run` of the
// previous release, which keeps sweeping and repairing afterwards; a repair
// this release holds for review (--repair-mode review) is never applied by
// the previous release's workers; and this release then approves and
// applies it.
func TestPreviousReleaseKeepsSweeping(t *testing.T) {
	t.Parallel()
	prev := releaseBinary(t, previousRelease)
	b := setup(t)
	b.url = pgtest.NewEmptyURL(t)
	env := map[string]string{}
	for k, v := range b.env {
		env[k] = v
	}
	env["DATABASE_URL"] = b.url
	if out, err := runRelease(t, prev, env, "migrate"); err != nil {
		t.Fatalf("the previous release's migrate: %v\n%s", err, out)
	}
	pool := pgtestPool(t, b.url)
	old := time.Now().Add(-time.Hour)
	drift := func(ids ...string) []int64 {
		t.Helper()
		ps := make([]pgtest.Payment, len(ids))
		for i, id := range ids {
			ps[i] = pgtest.Payment{IntentID: id, Status: payrecon.StatusPending, CreatedAt: old, UpdatedAt: old}
			b.sim.Put(stripesim.Intent{ID: id, Status: payrecon.IntentSucceeded, Created: old, Amount: 1000, Currency: "usd"})
		}
		return pgtest.InsertPayments(t, pool, ps)
	}
	paid := func(id int64) bool {
		return pgtest.Count(t, pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid' AND version = 1", id) == 1
	}
	before := drift("pi_up_before_0", "pi_up_before_1")

	// The previous release runs…
	stop := startRelease(t, prev, env)
	for _, id := range before {
		testkit.WaitFor(t, "the previous release to repair a drift", time.Minute, func() bool { return paid(id) })
	}
	// …while this release migrates the schema under it, and goes on
	// sweeping and repairing with its own sweep and workers.
	if r := runCLI(t, env, "migrate"); r.code != 0 {
		t.Fatalf("this release's migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "doctor", "--replicas", "1", "--min-cycle", "24h"); !strings.Contains(r.stdout, "OK    migrations") {
		t.Errorf("doctor after the upgrade:\n%s", r.stdout)
	}
	after := drift("pi_up_after")
	testkit.WaitFor(t, "the previous release to repair a drift after the migration", time.Minute, func() bool { return paid(after[0]) })
	stop()

	// A repair this release holds for review is never applied by the
	// previous release's workers (a rolling update: an old replica starts
	// again beside the new one), which repair a later drift meanwhile.
	held := drift("pi_up_held")
	if r := runCLI(t, env, "scan", "--once", "--rps", "0", "--grace", "0", "--repair-mode", "review"); r.code != 0 {
		t.Fatalf("this release's scan in review: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM outbox WHERE held_at IS NOT NULL AND processed_at IS NULL"); n != 1 {
		t.Fatalf("%d commands held, want 1", n)
	}
	stop = startRelease(t, prev, env)
	later := drift("pi_up_later")
	testkit.WaitFor(t, "the previous release to repair a later drift", time.Minute, func() bool { return paid(later[0]) })
	stop()
	if paid(held[0]) {
		t.Fatal("the previous release applied a repair held for review")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'payrecon_repair' AND state = 'pending'"); n != 1 {
		t.Errorf("%d pending repair jobs, want the held one", n)
	}
	if out, err := runRelease(t, prev, env, "status"); err != nil {
		t.Errorf("the previous release's status on the new schema: %v\n%s", err, out)
	}
	// This release approves and applies the held repair, once.
	if r := runCLI(t, env, "repairs", "approve", "--all", "--by", "upgrader"); r.code != 0 {
		t.Fatalf("repairs approve: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "relay", "--drain"); r.code != 0 {
		t.Fatalf("relay --drain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !paid(held[0]) {
		t.Error("the approved repair was not applied")
	}
	if n := pgtest.Count(t, pool, "SELECT count(*) FROM payment_transitions WHERE source = 'repair'"); n != 5 {
		t.Errorf("%d repair transitions, want 5 (each drift once)", n)
	}
}
