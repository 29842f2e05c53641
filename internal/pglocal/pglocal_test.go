package pglocal

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A real cluster: initdb, start, connect, create a database, stop, and the
// folder is gone.
func TestStartConnectStop(t *testing.T) {
	t.Parallel()
	if _, _, err := findBinaries(); errors.Is(err, ErrNotInstalled) {
		t.Skip(err)
	}
	parent, err := os.MkdirTemp("", "pglocal-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { // the server's user must enter it
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(t.Output(), nil))

	url, stop, err := start(ctx, logger, parent)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	entries, _ := os.ReadDir(parent)
	if len(entries) != 1 {
		t.Fatalf("%d entries in %s, want the cluster's folder", len(entries), parent)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	var user string
	if err := conn.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil || user != "postgres" {
		t.Errorf("current_user = %q, %v; want postgres", user, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE pglocal_probe"); err != nil {
		t.Errorf("create database: %v", err)
	}
	conn.Close(ctx)

	stop()
	stopped = true
	stop() // idempotent
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("the cluster's folder is left behind: %v", entries)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	defer ccancel()
	if c, err := pgx.Connect(cctx, url); err == nil {
		c.Close(cctx)
		t.Error("the server still answers after stop")
	}
}

func TestCompareVersionsPicksNewest(t *testing.T) {
	t.Parallel()
	dirs := []string{"/usr/lib/postgresql/9.6/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"}
	slices.SortFunc(dirs, func(a, b string) int { return compareVersions(b, a) })
	if dirs[0] != "/usr/lib/postgresql/16/bin" || dirs[2] != "/usr/lib/postgresql/9.6/bin" {
		t.Errorf("newest first: %v", dirs)
	}
}
