// Package pglocal starts a throwaway PostgreSQL cluster: initdb into a
// temporary folder, pg_ctl start on a free loopback port (and a Unix socket
// in that folder), and, when stopped, an immediate shutdown and the removal
// of the folder. It is the last resort of `payrecon demo` on a machine where
// no PostgreSQL answers but one is installed.
//
// PostgreSQL refuses to run as root: when the process is root, initdb and
// the server run as the "postgres" user (or "nobody" when there is none),
// and the temporary folder is handed to that user.
package pglocal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotInstalled says no initdb could be found.
var ErrNotInstalled = errors.New("PostgreSQL is not installed: no initdb found; install PostgreSQL 15+ or set DATABASE_URL")

// searchDirs returns the folders searched for initdb and pg_ctl after PATH;
// within a glob the newest version wins (Debian and Ubuntu install each
// major version under /usr/lib/postgresql/<major>/bin, RHEL under
// /usr/pgsql-<major>/bin).
func searchDirs() []string {
	return []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin", "/opt/homebrew/opt/postgresql@*/bin"}
}

// startTimeout bounds pg_ctl's wait for the server to accept connections.
const startTimeout = 60 * time.Second

// Start creates and starts a throwaway cluster and returns the URL of its
// "postgres" database (user postgres, trust authentication, 127.0.0.1 only)
// and a function that stops the server and removes its folder. stop is safe
// to call more than once and from any goroutine; it does not depend on ctx,
// so it also works after ctx was cancelled. logger may be nil.
func Start(ctx context.Context, logger *slog.Logger) (url string, stop func(), err error) {
	return start(ctx, logger, "")
}

// Cluster is a throwaway cluster that a test can stop and start again on
// the same port, its data kept (a database restart, an outage).
type Cluster struct {
	settings []string
	c        *cluster
	port     int
	url      string
	// Stop stops the server at once and removes its folder (as Start's stop).
	Stop func()
}

// StartCluster is Start, returning a Cluster that can also be paused and
// resumed.
// Settings (each "name=value") are passed to the server after the
// defaults, which they override (e.g. full_page_writes=on for a benchmark
// of WAL volume).
func StartCluster(ctx context.Context, logger *slog.Logger, settings ...string) (*Cluster, error) {
	cl := &Cluster{settings: settings}
	url, stop, err := startCluster(ctx, logger, "", cl)
	if err != nil {
		return nil, err
	}
	cl.url, cl.Stop = url, stop
	return cl, nil
}

// URL is the URL of the cluster's "postgres" database.
func (cl *Cluster) URL() string { return cl.url }

// Pause stops the server (fast shutdown: every session is disconnected),
// keeping its data; connections are refused until Resume.
func (cl *Cluster) Pause(ctx context.Context) error {
	cmd := cl.c.command(ctx, cl.c.pgctl, "stop", "-D", cl.c.data, "-m", "fast", "-w")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("stop the throwaway PostgreSQL: %w: %s", err, lastLines(out, 3))
	}
	return nil
}

// Resume starts the paused server again on the same port.
func (cl *Cluster) Resume(ctx context.Context) error {
	return cl.c.start(ctx, cl.port)
}

// start is Start with the parent of the temporary folder ("" means the
// system's temporary folder).
func start(ctx context.Context, logger *slog.Logger, parent string) (string, func(), error) {
	return startCluster(ctx, logger, parent, nil)
}

// startCluster is start; when cl is not nil it is told the cluster and its
// port.
func startCluster(ctx context.Context, logger *slog.Logger, parent string, cl *Cluster) (string, func(), error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	initdb, pgctl, err := findBinaries()
	if err != nil {
		return "", nil, err
	}
	cred, owner, err := runAs()
	if err != nil {
		return "", nil, err
	}
	if parent == "" {
		parent = os.TempDir()
	}
	if cred != nil && !reachable(parent) {
		// A private TMPDIR (0700 root) cannot be entered by the server's user.
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "payrecon-pg-")
	if err != nil {
		return "", nil, fmt.Errorf("create a folder for the throwaway PostgreSQL: %w", err)
	}
	c := &cluster{dir: dir, data: filepath.Join(dir, "data"), pgctl: pgctl, cred: cred, log: logger}
	if cl != nil {
		c.settings = cl.settings
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", nil, fmt.Errorf("hand %s to user %s for the throwaway PostgreSQL: %w", dir, owner, err)
		}
	}
	if err := c.initdb(ctx, initdb); err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, err
	}
	var port int
	for attempt := 1; ; attempt++ {
		if port, err = freePort(); err != nil {
			_ = os.RemoveAll(dir)
			return "", nil, err
		}
		logger.Info("starting a throwaway PostgreSQL", "dir", dir, "port", port, "initdb", initdb, "user", owner)
		err = c.start(ctx, port)
		if err == nil {
			break
		}
		// Another process may have taken the port between freePort and
		// the server's bind: try another one.
		if attempt == 3 || !strings.Contains(err.Error(), "already in use") {
			c.stop()
			return "", nil, err
		}
	}
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if cl != nil {
		cl.c, cl.port = c, port
	}
	return url, c.stop, nil
}

// cluster is one throwaway cluster.
type cluster struct {
	dir, data string
	pgctl     string
	cred      *syscall.Credential
	log       *slog.Logger
	settings  []string
	started   bool
	once      sync.Once
}

func (c *cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir // the server's user may not be able to enter the caller's folder
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "PGTZ=UTC")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *cluster) initdb(ctx context.Context, initdb string) error {
	cmd := c.command(ctx, initdb, "-D", c.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initdb %s: %w", c.data, ctx.Err())
		}
		return fmt.Errorf("initdb %s failed: %w: %s", c.data, err, lastLines(out, 5))
	}
	return nil
}

func (c *cluster) start(ctx context.Context, port int) error {
	logFile := filepath.Join(c.dir, "postgres.log")
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
		port, c.dir)
	for _, kv := range c.settings {
		opts += " -c " + kv
	}
	cmd := c.command(ctx, c.pgctl, "start", "-w", "-t", strconv.Itoa(int(startTimeout/time.Second)),
		"-D", c.data, "-l", logFile, "-o", opts)
	out, err := cmd.CombinedOutput()
	c.started = true // pg_ctl may have started the server even when it reports a failure
	if err != nil {
		logTail, _ := os.ReadFile(logFile)
		if ctx.Err() != nil {
			return fmt.Errorf("start the throwaway PostgreSQL: %w", ctx.Err())
		}
		return fmt.Errorf("the throwaway PostgreSQL did not start: %w: %s %s", err, lastLines(out, 3), lastLines(logTail, 5))
	}
	return nil
}

// stop shuts the server down at once and removes the folder.
func (c *cluster) stop() {
	c.once.Do(func() {
		if c.started {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := c.command(ctx, c.pgctl, "stop", "-D", c.data, "-m", "immediate", "-w")
			if out, err := cmd.CombinedOutput(); err != nil {
				c.log.Warn("stopping the throwaway PostgreSQL failed", "dir", c.dir, "error", err, "output", lastLines(out, 3))
			}
		}
		if err := os.RemoveAll(c.dir); err != nil {
			c.log.Warn("removing the throwaway PostgreSQL's folder failed", "dir", c.dir, "error", err)
			return
		}
		c.log.Info("throwaway PostgreSQL stopped and removed", "dir", c.dir)
	})
}

// findBinaries finds initdb on PATH or in searchDirs (newest version first),
// and pg_ctl next to it.
func findBinaries() (initdb, pgctl string, err error) {
	var candidates []string
	if p, err := exec.LookPath("initdb"); err == nil {
		candidates = append(candidates, p)
	}
	for _, pattern := range searchDirs() {
		dirs, _ := filepath.Glob(pattern)
		slices.SortFunc(dirs, func(a, b string) int { return compareVersions(b, a) }) // newest first
		for _, d := range dirs {
			candidates = append(candidates, filepath.Join(d, "initdb"))
		}
	}
	for _, c := range candidates {
		if !executable(c) {
			continue
		}
		ctl := filepath.Join(filepath.Dir(c), "pg_ctl")
		if !executable(ctl) {
			p, err := exec.LookPath("pg_ctl")
			if err != nil {
				continue
			}
			ctl = p
		}
		return c, ctl, nil
	}
	return "", "", ErrNotInstalled
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// compareVersions orders paths by the numbers in them ("…/9.6/bin" before
// "…/15/bin"), then as strings.
func compareVersions(a, b string) int {
	na, nb := numbers(a), numbers(b)
	if c := slices.Compare(na, nb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func numbers(s string) []int {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		n, err := strconv.Atoi(f)
		if err == nil {
			out = append(out, n)
		}
	}
	return out
}

// runAs returns the credential to run PostgreSQL with when this process is
// root (nil otherwise) and the user's name.
func runAs() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, name, nil
	}
	return nil, "", errors.New("PostgreSQL refuses to run as root and there is no postgres or nobody user to run it as; set DATABASE_URL")
}

// reachable reports whether every folder from / to dir can be entered by
// anyone (o+x), as the server's user must.
func reachable(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&fs.FileMode(0o001) == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for the throwaway PostgreSQL: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// lastLines returns the last n non-empty lines of b, joined by " | ".
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(b, nil))), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
