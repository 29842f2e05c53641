package sweep_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/sweep"
)

// drifted builds n rows where every 5th is a missed success (repairable)
// and every 7th (not 5th) is paid locally but not in Stripe (needs review).
func drifted(n int) (rows []row, repairable, review int) {
	rows = uniform(n)
	for i := range rows {
		switch {
		case i%5 == 0:
			rows[i] = row{payrecon.StatusPending, payrecon.IntentSucceeded}
			repairable++
		case i%7 == 0:
			rows[i] = row{payrecon.StatusPaid, payrecon.IntentCanceled}
			review++
		}
	}
	return rows, repairable, review
}

func assertNoDuplicates(t *testing.T, b *testBundle, repairable, review int) {
	t.Helper()
	if n := b.count(t, "SELECT count(*) FROM payments WHERE last_reconciled_at IS NULL"); n != 0 {
		t.Errorf("%d rows never covered", n)
	}
	if n := b.count(t, "SELECT count(*) FROM reconciliation_findings"); n != repairable+review {
		t.Errorf("%d findings, want %d (one per drifted row)", n, repairable+review)
	}
	if n := b.count(t, "SELECT count(*) FROM (SELECT payment_id, kind FROM reconciliation_findings GROUP BY 1, 2 HAVING count(*) > 1) d"); n != 0 {
		t.Errorf("%d (payment, kind) pairs recorded twice", n)
	}
	if n := b.count(t, "SELECT count(*) FROM outbox"); n != repairable {
		t.Errorf("%d repair commands, want %d", n, repairable)
	}
	if n := b.count(t, "SELECT count(*) FROM (SELECT aggregate_id FROM outbox GROUP BY 1 HAVING count(*) > 1) d"); n != 0 {
		t.Errorf("%d payments got two repair commands", n)
	}
}

// Four sweepers on one job at once, with no lease: the cursor's
// compare-and-set is the only thing between them. No duplicate finding, no
// duplicate repair command, every row covered.
func TestConcurrentSweepersWithoutLeaseCASIsTheSafetyNet(t *testing.T) {
	t.Parallel()
	rows, repairable, review := drifted(1000)
	b := setup(t, rows)
	b.gw.hook = func(ctx context.Context, id string) { runtime.Gosched() }
	var wg sync.WaitGroup
	lost := make([]int, 4)
	for i := range lost {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := b.sweeper(sweep.Config{Batch: 50, Concurrency: 4})
			for {
				rep, err := s.RunBatch(context.Background())
				if errors.Is(err, payrecon.ErrConcurrentRun) {
					lost[i]++
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if rep.Wrapped {
					return
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("batches discarded by the CAS: %v", lost)
	assertNoDuplicates(t, b, repairable, review)
}

// With the lease, a second sweeper spends no Stripe calls while the first
// holds it: without --wait it fails at once, naming the holder; with it, it
// waits and then sweeps a cycle of its own.
func TestSecondSweeperWaitsForLease(t *testing.T) {
	t.Parallel()
	rows, repairable, review := drifted(300)
	b := setup(t, rows)
	lease := func(ctx context.Context, job string, wait bool) (payrecon.Lease, error) {
		return postgres.AcquireLease(ctx, b.pool, job, wait)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	var once sync.Once
	b.gw.hook = func(ctx context.Context, id string) {
		once.Do(func() { close(started) })
		<-release
	}
	first := b.sweeper(sweep.Config{Batch: 100, LeaseFunc: lease})
	done := make(chan error, 1)
	go func() {
		_, err := first.RunCycle(context.Background(), nil)
		done <- err
	}()
	<-started

	impatient := b.sweeper(sweep.Config{Batch: 100, LeaseFunc: lease})
	callsBefore := b.gw.calls.Load()
	_, err := impatient.RunCycle(context.Background(), nil)
	var held *postgres.LeaseHeldError
	if !errors.As(err, &held) || held.Holder == nil {
		t.Fatalf("second sweeper err = %v, want LeaseHeldError naming the holder", err)
	}

	patient := b.sweeper(sweep.Config{Batch: 100, WaitForLease: true, LeaseFunc: lease})
	patientDone := make(chan sweep.CycleReport, 1)
	go func() {
		rep, err := patient.RunCycle(context.Background(), nil)
		if err != nil {
			t.Error(err)
		}
		patientDone <- rep
	}()
	// The waiting sweeper must not call Stripe while the first holds the lease.
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		if c := b.gw.calls.Load(); c > callsBefore+int64(first.Config().Concurrency) {
			t.Fatalf("Stripe calls went from %d to %d while the lease was held", callsBefore, c)
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rep := <-patientDone
	if rep.Scanned != 300 || rep.NewFindings != 0 {
		t.Errorf("the waiting sweeper's cycle: %+v; want all 300 rows and nothing new", rep)
	}
	assertNoDuplicates(t, b, repairable, review)
}
