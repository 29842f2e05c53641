package relay_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := (relay.Config{}).Validate(); err != nil {
		t.Errorf("the zero config is invalid: %v", err)
	}
	for name, c := range map[string]relay.Config{
		"negative workers":           {Workers: -1},
		"too many workers":           {Workers: 20000},
		"negative attempts":          {MaxAttempts: -2},
		"cooldown under River's min": {FetchCooldown: time.Microsecond},
		"poll faster than cooldown":  {FetchCooldown: time.Second, FetchPollInterval: 10 * time.Millisecond},
		"rescue before timeout":      {JobTimeout: time.Minute, RescueStuckJobsAfter: 30 * time.Second},
		"negative retention":         {DeadLetterRetention: -time.Hour},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := relay.New(nil, postgres.NewWriter(nil), relay.Config{}); err == nil {
		t.Error("New without a pool succeeded")
	}
}

// Enqueueing is transactional, and a command is never enqueued twice.
func TestEnqueueIsTransactionalAndUnique(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	rs := b.seedRepairs(t, 3, false)
	rollback := errors.New("roll back")
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if err := b.relay.Enqueue(ctx, tx, rs.outbox); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job"); n != 0 {
		t.Fatalf("%d jobs after a rolled back enqueue", n)
	}
	for range 2 {
		if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error { return b.relay.Enqueue(ctx, tx, rs.outbox[:2]) }); err != nil {
			t.Fatal(err)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND queue = $2 AND max_attempts = 3", relay.Kind, relay.Queue); n != 2 {
		t.Errorf("%d jobs after enqueueing two commands twice, want 2", n)
	}
	d, err := b.relay.Delivery(ctx, rs.outbox[2])
	if err != nil || d.State != relay.DeliveryNotEnqueued || d.Job != nil || d.EventType != "ApplyPaymentSucceeded" {
		t.Errorf("delivery of the unenqueued command = %+v, %v", d, err)
	}
	// The third command, written without its job, is found and enqueued.
	if n, err := b.relay.EnqueueUnprocessed(ctx); err != nil || n != 1 {
		t.Errorf("EnqueueUnprocessed = %d, %v; want 1", n, err)
	}
	if n, err := b.relay.EnqueueUnprocessed(ctx); err != nil || n != 0 {
		t.Errorf("second EnqueueUnprocessed = %d, %v; want 0", n, err)
	}
	d, err = b.relay.Delivery(ctx, rs.outbox[2])
	if err != nil || d.State != relay.DeliveryQueued || d.Job == nil || d.Job.Attempt != 0 {
		t.Errorf("delivery after EnqueueUnprocessed = %+v, %v", d, err)
	}
	if _, err := b.relay.Delivery(ctx, 987654); !errors.Is(err, payrecon.ErrNotFound) {
		t.Errorf("delivery of a missing command: %v", err)
	}
}

// A running relay is woken by River's insert notification: with the poll
// interval at a minute, only LISTEN/NOTIFY can deliver within the deadline.
func TestRelayWakesOnCommit(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.FetchPollInterval = time.Minute
	b := setup(t, cfg)
	ctx := context.Background()
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.relay.Start(ctx); !errors.Is(err, relay.ErrRunning) {
		t.Errorf("second Start: %v", err)
	}
	if _, err := b.relay.Drain(ctx); !errors.Is(err, relay.ErrRunning) {
		t.Errorf("Drain while started: %v", err)
	}
	// Round 0 may be found by the relay's first fetch; the later rounds
	// can only be found through the notification sent at commit.
	for round := range 3 {
		rs := b.seedRepairs(t, 1, true)
		testkit.WaitFor(t, "the command to be applied", 10*time.Second, func() bool {
			return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL", rs.outbox[0]) == 1
		})
		if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE id = $1 AND resolution = 'repaired'", rs.findings[0]); n != 1 {
			t.Errorf("round %d: finding not resolved as repaired", round)
		}
		d, err := b.relay.Delivery(ctx, rs.outbox[0])
		if err != nil || d.State != relay.DeliveryApplied || d.Outcome != "applied" || d.Job == nil {
			t.Fatalf("round %d: delivery = %+v, %v", round, d, err)
		}
		// The completion committed with the effect; River's completer may
		// still be finishing its own bookkeeping.
		testkit.WaitFor(t, "the job to be completed", 10*time.Second, func() bool {
			d, err := b.relay.Delivery(ctx, rs.outbox[0])
			return err == nil && d.Job.State == "completed"
		})
	}
	if err := b.relay.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.relay.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// Drain applies everything due, stops, and says what it did.
func TestDrainReport(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	installAudit(t, b.pool)
	rs := b.seedRepairs(t, 30, true)
	// A webhook got to three payments first; two were marked failed.
	pgtest.Exec(t, b.pool, "UPDATE payments SET status = 'paid' WHERE id = ANY($1)", rs.payments[:3])
	pgtest.Exec(t, b.pool, "UPDATE payments SET status = 'failed' WHERE id = ANY($1)", rs.payments[3:5])
	invalid := b.insertCommand(t, "RefundEverything", `{"payment_id": 1}`)
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := relay.DrainReport{Applied: 25, AlreadyDone: 3, Unapplied: 2, DeadLettered: 1, Duration: rep.Duration}
	if rep != want {
		t.Errorf("report %+v, want %+v", rep, want)
	}
	if rep.Duration <= 0 {
		t.Errorf("duration %s", rep.Duration)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE finalized_at IS NULL"); n != 0 {
		t.Errorf("%d jobs left unfinished after the drain", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL AND repair_outcome LIKE 'moved_elsewhere%'"); n != 2 {
		t.Errorf("%d findings left open for review, want 2", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM test_applied"); n != 30 {
		t.Errorf("%d commands marked processed, want 30", n)
	}
	d, err := b.relay.Delivery(ctx, invalid)
	if err != nil || d.State != relay.DeliveryDeadLetter || !strings.Contains(d.LastError, "unknown event_type") {
		t.Errorf("invalid command's delivery = %+v, %v", d, err)
	}
	// Nothing left: a second drain returns at once with an empty report.
	rep, err = b.relay.Drain(ctx)
	if err != nil || rep.Applied+rep.AlreadyDone+rep.Unapplied+rep.Failed+rep.DeadLettered != 0 {
		t.Errorf("second drain = %+v, %v", rep, err)
	}
}

// An unknown event_type, a bad payload and a missing finding are each ended
// at their first attempt, listed as dead letters with a clear error and
// written to outbox.last_error, while the relay keeps applying good
// commands. Fixed by an operator, a dead letter is retried and applied.
func TestInvalidCommandsAreDeadLetteredAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pid := pgtest.InsertPayments(t, b.pool, []pgtest.Payment{{IntentID: "pi_x", Status: payrecon.StatusPending}})[0]
	cases := map[int64]string{
		b.insertCommand(t, "RefundEverything", `{"payment_id": 1}`):                        `unknown event_type "RefundEverything"`,
		b.insertCommand(t, "ApplyPaymentSucceeded", `{"finding_id": 1}`):                   "payload has no valid payment_id",
		b.insertCommand(t, "ApplyPaymentSucceeded", `{"payment_id": "seven"}`):             "payload has no valid payment_id",
		b.insertCommand(t, "ApplyPaymentSucceeded", `{"payment_id": 1, "finding_id": 99}`): "finding 99 does not exist",
	}
	testkit.WaitFor(t, "four dead letters", 10*time.Second, func() bool {
		dl, err := b.relay.DeadLetters(ctx, 0)
		return err == nil && len(dl) == 4
	})
	dl, err := b.relay.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dl {
		want, ok := cases[d.OutboxID]
		if !ok || d.State != "cancelled" || d.Attempts != 1 || !strings.Contains(d.LastError, want) || d.At.IsZero() || d.JobID == 0 {
			t.Errorf("dead letter %+v, want state cancelled after 1 attempt with %q", d, want)
		}
		var lastError string
		if err := b.pool.QueryRow(ctx, "SELECT last_error FROM outbox WHERE id = $1", d.OutboxID).Scan(&lastError); err != nil || !strings.Contains(lastError, want) {
			t.Errorf("outbox %d last_error = %q, %v", d.OutboxID, lastError, err)
		}
	}
	if dl, err := b.relay.DeadLetters(ctx, 2); err != nil || len(dl) != 2 {
		t.Errorf("DeadLetters(2) = %d, %v", len(dl), err)
	}
	// The relay is still working.
	rs := b.seedRepairs(t, 1, true)
	testkit.WaitFor(t, "a good command after the bad ones", 10*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL", rs.outbox[0]) == 1
	})
	// An operator fixes the unknown event type and retries it.
	var fixed relay.DeadLetter
	for _, d := range dl {
		if d.EventType == "RefundEverything" {
			fixed = d
		}
	}
	pgtest.Exec(t, b.pool, "UPDATE outbox SET event_type = 'ApplyPaymentSucceeded', payload = jsonb_build_object('payment_id', $2::bigint) WHERE id = $1", fixed.OutboxID, pid)
	if _, err := b.relay.Retry(ctx, fixed.JobID); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the retried command to be applied", 10*time.Second, func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM outbox WHERE id = $1 AND processed_at IS NOT NULL AND last_error IS NULL", fixed.OutboxID) == 1
	})
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE id = $1 AND status = 'paid' AND version = 1", pid); n != 1 {
		t.Error("the retried command did not pay the payment")
	}
}

// A command that keeps failing is retried by River, dead-lettered after
// MaxAttempts with its last error, and applied once an operator retries it
// after the cause is gone.
func TestFailingCommandIsDeadLetteredThenRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	unfreeze := freezePayments(t, b)
	rs := b.seedRepairs(t, 1, true)
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 3 || rep.DeadLettered != 1 || rep.Applied != 0 {
		t.Errorf("drain report %+v, want 3 failed attempts and 1 dead letter", rep)
	}
	dl, err := b.relay.DeadLetters(ctx, 0)
	if err != nil || len(dl) != 1 {
		t.Fatalf("dead letters %+v, %v", dl, err)
	}
	d := dl[0]
	if d.State != "discarded" || d.Attempts != 3 || d.OutboxID != rs.outbox[0] || d.EventType != "ApplyPaymentSucceeded" ||
		!strings.Contains(d.LastError, "payments are frozen") {
		t.Errorf("dead letter %+v", d)
	}
	del, err := b.relay.Delivery(ctx, rs.outbox[0])
	if err != nil || del.State != relay.DeliveryDeadLetter || !strings.Contains(del.LastError, "payments are frozen") ||
		del.Job == nil || del.Job.Attempt != 3 || del.Job.MaxAttempts != 3 {
		t.Errorf("delivery %+v, %v", del, err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE status = 'pending' AND version = 0"); n != 1 {
		t.Error("a failed command changed the payment")
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM reconciliation_findings WHERE resolved_at IS NULL"); n != 1 {
		t.Error("the finding of a failed command was closed")
	}

	unfreeze()
	info, err := b.relay.Retry(ctx, d.JobID)
	if err != nil || info.State != "available" || info.MaxAttempts != 4 {
		t.Fatalf("retry = %+v, %v", info, err)
	}
	rep, err = b.relay.Drain(ctx)
	if err != nil || rep.Applied != 1 || rep.Failed != 0 {
		t.Fatalf("drain after retry = %+v, %v", rep, err)
	}
	del, err = b.relay.Delivery(ctx, rs.outbox[0])
	if err != nil || del.State != relay.DeliveryApplied || del.LastError != "" || del.Outcome != "applied" {
		t.Errorf("delivery after retry %+v, %v", del, err)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payments WHERE status = 'paid' AND version = 1"); n != 1 {
		t.Error("the retried command did not pay the payment once")
	}
	if dl, err := b.relay.DeadLetters(ctx, 0); err != nil || len(dl) != 0 {
		t.Errorf("dead letters after the retry: %+v, %v", dl, err)
	}
	if _, err := b.relay.Retry(ctx, d.JobID); !errors.Is(err, relay.ErrNotRetryable) {
		t.Errorf("retrying a completed job: %v", err)
	}
	if _, err := b.relay.Retry(ctx, 987654); !errors.Is(err, payrecon.ErrNotFound) {
		t.Errorf("retrying a missing job: %v", err)
	}
}

// An insert-only relay enqueues and answers operator queries, but never
// works jobs.
func TestInsertOnly(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.InsertOnly = true
	b := setup(t, cfg)
	ctx := context.Background()
	rs := b.seedRepairs(t, 2, true)
	if err := b.relay.Start(ctx); !errors.Is(err, relay.ErrInsertOnly) {
		t.Errorf("Start: %v", err)
	}
	if _, err := b.relay.Drain(ctx); !errors.Is(err, relay.ErrInsertOnly) {
		t.Errorf("Drain: %v", err)
	}
	d, err := b.relay.Delivery(ctx, rs.outbox[1])
	if err != nil || d.State != relay.DeliveryQueued {
		t.Errorf("delivery %+v, %v", d, err)
	}
}

// later retries in an hour.
type later struct{}

func (later) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Hour) }

// A retry scheduled beyond the drain's horizon is left for later and
// reported; an operator can make it run now.
func TestDrainLeavesLaterRetries(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RetryPolicy = later{}
	b := setup(t, cfg)
	ctx := context.Background()
	unfreeze := freezePayments(t, b)
	rs := b.seedRepairs(t, 1, true)
	rep, err := b.relay.Drain(ctx)
	if err != nil || rep.Failed != 1 || rep.RetryLater != 1 || rep.DeadLettered != 0 {
		t.Fatalf("drain = %+v, %v; want 1 failed attempt left for later", rep, err)
	}
	d, err := b.relay.Delivery(ctx, rs.outbox[0])
	if err != nil || d.State != relay.DeliveryRetrying || d.Job.State != "retryable" || !strings.Contains(d.LastError, "frozen") {
		t.Fatalf("delivery = %+v, %v", d, err)
	}
	unfreeze()
	if _, err := b.relay.Retry(ctx, d.Job.ID); err != nil {
		t.Fatal(err)
	}
	rep, err = b.relay.Drain(ctx)
	if err != nil || rep.Applied != 1 || rep.RetryLater != 0 {
		t.Errorf("drain after the retry = %+v, %v", rep, err)
	}
}

// tenSecondsLater retries a failed attempt after ten seconds: within the
// drain's default horizon, and later than a loaded machine needs for the
// first attempt.
type tenSecondsLater struct{}

func (tenSecondsLater) NextRetry(*rivertype.JobRow) time.Time {
	return time.Now().Add(10 * time.Second)
}

// A drain whose context ends stops cleanly and says what it did; the relay
// can drain again afterwards, and picks up the retry it left.
func TestDrainStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.RetryPolicy = tenSecondsLater{}
	b := setup(t, cfg)
	unfreeze := freezePayments(t, b)
	b.seedRepairs(t, 1, true)
	// The first attempt fails; its retry, ten seconds later, is within the
	// drain's horizon, so the drain waits for it and meets its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rep, err := b.relay.Drain(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || rep.Failed != 1 || rep.Applied != 0 {
		t.Fatalf("drain = %+v, %v; want one failed attempt and the deadline", rep, err)
	}
	unfreeze()
	rep, err = b.relay.Drain(context.Background())
	if err != nil || rep.Applied != 1 {
		t.Errorf("drain after the interrupted one = %+v, %v", rep, err)
	}
}
