package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// helperNotify is TestHelperProcess's role "notify": a relay that delivers
// notifications to helperNotifyURL until it is killed.
func helperNotify() {
	err := func() error {
		ctx := context.Background()
		pool, err := pgxpool.New(ctx, os.Getenv(helperDB))
		if err != nil {
			return err
		}
		defer pool.Close()
		r, err := relay.New(pool, postgres.NewWriter(nil), relay.Config{
			Workers: 2, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
			FetchPollInterval: 100 * time.Millisecond, JobTimeout: time.Second, RescueStuckJobsAfter: 8 * time.Second,
			Notify: relay.NotifyConfig{URL: os.Getenv(helperNotifyURL), Secret: notifySecret, Timeout: time.Second,
				RetryMax: 50 * time.Millisecond, Workers: 5},
		})
		if err != nil {
			return err
		}
		if err := r.Start(ctx); err != nil {
			return err
		}
		select {} // until killed
	}()
	fmt.Fprintln(os.Stderr, "helper:", err)
	os.Exit(1)
}

// A relay process killed while its deliveries are in flight (the receiver
// has them, its answers never arrive): another process delivers every
// notification again, so the receiver sees each at least once and nothing
// is lost.
func TestNotificationsSurviveAKilledProcess(t *testing.T) {
	t.Parallel()
	var (
		hold     atomic.Bool
		inFlight = make(chan struct{}, 100)
		release  = make(chan struct{})
	)
	hold.Store(true)
	rv := newReceiver(t, func(payrecon.Notification) int {
		if hold.Load() {
			inFlight <- struct{}{}
			<-release // the process is killed meanwhile
		}
		return 0
	})
	cfg := testConfig(t)
	cfg.InsertOnly = true
	cfg.Notify = relay.NotifyConfig{URL: rv.srv.URL, Secret: notifySecret}
	b := setup(t, cfg)
	ctx := context.Background()
	ids := pgtest.InsertPayments(t, b.pool, payments(20))
	if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		for _, id := range ids {
			if _, err := b.writer.Apply(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperRole+"=notify", helperDB+"="+b.url, helperNotifyURL+"="+rv.srv.URL)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	victim := start()
	select {
	case <-inFlight:
	case <-time.After(90 * time.Second):
		t.Fatal("no delivery reached the receiver")
	}
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	hold.Store(false)
	close(release) // the dead process's requests finish; nobody hears the answers
	start()
	waitFor(t, "every notification", func() bool { return len(rv.ackedIDs()) == 20 })
	waitFor(t, "every job completed", func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'", relay.NotifyKind) == 20
	})
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if len(rv.acked) < 20 || rv.badSigns != 0 {
		t.Errorf("%d deliveries acknowledged for 20 transitions, %d bad signatures", len(rv.acked), rv.badSigns)
	}
}
