package relay_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

const notifySecret = "notify_test_secret"

// receiver is an application that receives notifications: it verifies
// each, answers status() (200 when it returns 0), and records what it
// acknowledged, in order.
type receiver struct {
	t      testing.TB
	srv    *httptest.Server
	status func(n payrecon.Notification) int

	mu       sync.Mutex
	acked    []payrecon.Notification
	refused  int
	badSigns int
}

func newReceiver(t testing.TB, status func(payrecon.Notification) int) *receiver {
	rv := &receiver{t: t, status: status}
	rv.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rv.mu.Lock()
		defer rv.mu.Unlock()
		if err := payrecon.VerifyNotification(body, r.Header.Get(payrecon.SignatureHeader), notifySecret, 5*time.Minute); err != nil {
			rv.badSigns++
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var n payrecon.Notification
		if err := json.Unmarshal(body, &n); err != nil || r.Header.Get(payrecon.IdempotencyKeyHeader) != strconv.FormatInt(n.ID, 10) {
			rv.badSigns++
			http.Error(w, "bad body or idempotency key", http.StatusBadRequest)
			return
		}
		if code := rv.status(n); code != 0 {
			rv.refused++
			w.WriteHeader(code)
			return
		}
		rv.acked = append(rv.acked, n)
	}))
	t.Cleanup(rv.srv.Close)
	return rv
}

// ackedIDs returns the distinct acknowledged transition ids.
func (rv *receiver) ackedIDs() map[int64]payrecon.Notification {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	out := map[int64]payrecon.Notification{}
	for _, n := range rv.acked {
		out[n.ID] = n
	}
	return out
}

func notifyConfig(t testing.TB, url string) relay.Config {
	cfg := testConfig(t)
	cfg.Notify = relay.NotifyConfig{URL: url, Secret: notifySecret, RetryMax: 20 * time.Millisecond, MaxAttempts: 10000, Timeout: 5 * time.Second}
	return cfg
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A receiver that is down for a while, then up, gets every transition at
// least once, signed, and one payment's transitions in version order,
// whichever road they came by (repairs through the relay, a direct writer
// call).
func TestNotificationsReachAReceiverThatWasDown(t *testing.T) {
	t.Parallel()
	var down atomic.Bool
	down.Store(true)
	rv := newReceiver(t, func(payrecon.Notification) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	b := setup(t, notifyConfig(t, rv.srv.URL))
	ctx := context.Background()
	rs := b.seedRepairs(t, 20, true)
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the repairs", func() bool {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions") == 20
	})
	// A second transition for half of them (a payment put back to pending
	// by hand, then canceled through the writer): version 2, which must
	// reach the receiver after version 1.
	for _, id := range rs.payments[:10] {
		pgtest.Exec(t, b.pool, "UPDATE payments SET status = 'pending' WHERE id = $1", id)
		if err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			_, err := b.writer.Apply(ctx, tx, payrecon.ApplyPaymentCanceled, postgres.PaymentRef{ID: id})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1", relay.NotifyKind); n != 30 {
		t.Fatalf("%d notification jobs for 30 transitions", n)
	}
	waitFor(t, "refused deliveries", func() bool { rv.mu.Lock(); defer rv.mu.Unlock(); return rv.refused >= 20 })
	down.Store(false)
	waitFor(t, "every notification", func() bool { return len(rv.ackedIDs()) == 30 })

	rows, err := b.pool.Query(ctx, `SELECT t.id, t.payment_id, p.order_id, p.stripe_payment_intent_id, t.version, t.source
		FROM payment_transitions t JOIN payments p ON p.id = t.payment_id`)
	if err != nil {
		t.Fatal(err)
	}
	got := rv.ackedIDs()
	var (
		id, payment, version int64
		order, intent        string
		source               payrecon.TransitionSource
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &payment, &order, &intent, &version, &source}, func() error {
		n, ok := got[id]
		switch {
		case !ok:
			t.Errorf("transition %d never acknowledged", id)
		case n.Type != payrecon.NotificationType || n.PaymentID != payment || n.OrderID != order ||
			n.StripePaymentIntentID != intent || n.Version != version || n.Source != source:
			t.Errorf("transition %d notified as %+v", id, n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rv.mu.Lock()
	defer rv.mu.Unlock()
	last := map[int64]int64{}
	for _, n := range rv.acked {
		if n.Version < last[n.PaymentID] {
			t.Errorf("payment %d: version %d acknowledged after version %d", n.PaymentID, n.Version, last[n.PaymentID])
		}
		last[n.PaymentID] = n.Version
	}
	if rv.badSigns != 0 {
		t.Errorf("%d notifications failed verification", rv.badSigns)
	}
	for _, id := range rs.payments[:10] {
		if last[id] != 2 {
			t.Errorf("payment %d: last acknowledged version %d, want 2", id, last[id])
		}
	}
}

// A notification the receiver refuses until its last attempt is a dead
// letter, listed with the repairs'; an operator retries it once the
// receiver is fixed, and it is delivered.
func TestDeadLetteredNotificationIsRetriedByAnOperator(t *testing.T) {
	t.Parallel()
	var fixed atomic.Bool
	rv := newReceiver(t, func(payrecon.Notification) int {
		if fixed.Load() {
			return 0
		}
		return http.StatusInternalServerError
	})
	cfg := notifyConfig(t, rv.srv.URL)
	cfg.Notify.MaxAttempts = 2
	b := setup(t, cfg)
	ctx := context.Background()
	b.seedRepairs(t, 1, true)
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var dead relay.DeadLetter
	waitFor(t, "the dead letter", func() bool {
		dl, err := b.relay.DeadLetters(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dl {
			if d.Kind == relay.NotifyKind {
				dead = d
				return true
			}
		}
		return false
	})
	if dead.TransitionID == 0 || dead.Attempts != 2 || dead.State != "discarded" || dead.LastError == "" {
		t.Errorf("dead letter %+v", dead)
	}
	if q, err := postgres.NewMonitor(b.pool).Queue(ctx, relay.NotifyKind); err != nil || q.DeadLetters != 1 || q.Backlog != 0 {
		t.Errorf("notifications queue (status, metrics) = %+v, %v; want one dead letter", q, err)
	}
	fixed.Store(true)
	if _, err := b.relay.Retry(ctx, dead.JobID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the retried notification", func() bool { return len(rv.ackedIDs()) == 1 })
	if _, ok := rv.ackedIDs()[dead.TransitionID]; !ok {
		t.Errorf("acknowledged %v, want transition %d", rv.ackedIDs(), dead.TransitionID)
	}
}

// A notify URL without a secret cannot work.
func TestNotifyNeedsASecret(t *testing.T) {
	t.Parallel()
	cfg := relay.Config{Notify: relay.NotifyConfig{URL: "http://127.0.0.1:1/hook"}}
	if err := cfg.Validate(); !errors.Is(err, relay.ErrNotifySecret) {
		t.Errorf("validate = %v, want ErrNotifySecret", err)
	}
	cfg.Notify = relay.NotifyConfig{URL: "ftp://x", Secret: "s"}
	if err := cfg.Validate(); err == nil {
		t.Error("an ftp URL validated")
	}
}

// An embedding team's hook runs in the repair's transaction: its side
// effect commits with the transition, and its error rolls both back (River
// retries the repair, and the second attempt commits them once).
func TestTransitionHookCommitsWithTheRepair(t *testing.T) {
	t.Parallel()
	b := setup(t, testConfig(t))
	ctx := context.Background()
	pgtest.Exec(t, b.pool, "CREATE TABLE test_receipts (transition_id bigint PRIMARY KEY, payment_id bigint NOT NULL)")
	var calls atomic.Int64
	b.writer.OnTransition(func(ctx context.Context, tx pgx.Tx, tr payrecon.PaymentTransition) error {
		if _, err := tx.Exec(ctx, "INSERT INTO test_receipts VALUES ($1, $2)", tr.ID, tr.PaymentID); err != nil {
			return err
		}
		if calls.Add(1) == 1 {
			return errors.New("the receipt printer jammed")
		}
		return nil
	})
	rs := b.seedRepairs(t, 1, true)
	rep, err := b.relay.Drain(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != 1 || rep.Failed != 1 || calls.Load() != 2 {
		t.Errorf("drain %+v after %d hook calls; want one failed attempt, then applied", rep, calls.Load())
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM test_receipts r JOIN payment_transitions t ON t.id = r.transition_id WHERE t.payment_id = $1", rs.payments[0]); n != 1 {
		t.Errorf("%d receipts joined to the payment's transition, want 1", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM payment_transitions"); n != 1 {
		t.Errorf("%d transitions, want 1 (the failed attempt's rolled back)", n)
	}
}

// listenOn starts h on addr (another loopback address such as 127.0.0.2,
// as a redirect's target on another host would be).
func listenOn(t testing.TB, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// A receiver that answers with a redirect has not acknowledged anything:
// the redirect is never followed (a 301/302/303 would turn the POST into a
// bodiless GET whose 200 completed the job; a 307/308 would re-send the
// signed body to whatever host the Location names), each answer is a
// failed attempt, and after the last attempt the notification is a dead
// letter whose error names the Location, redacted.
func TestNotificationRedirectIsAFailedAttempt(t *testing.T) {
	t.Parallel()
	var landed atomic.Int64
	target := listenOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		landed.Add(1) // a 200 to whatever arrives, as a careless endpoint would
	}))
	codes := []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n payrecon.Notification
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Location", target.URL+"/landing?token=redirect-token-s3cret")
		w.WriteHeader(codes[int(n.ID)%len(codes)])
	}))
	t.Cleanup(redirector.Close)
	cfg := notifyConfig(t, redirector.URL+"/hook")
	cfg.Notify.MaxAttempts = 2
	b := setup(t, cfg)
	ctx := context.Background()
	b.seedRepairs(t, len(codes), true)
	if err := b.relay.Start(ctx); err != nil {
		t.Fatal(err)
	}
	final := func() int {
		return pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state IN ('completed', 'discarded', 'cancelled')", relay.NotifyKind)
	}
	waitFor(t, "every notification to end", func() bool { return final() == len(codes) })
	if n := landed.Load(); n != 0 {
		t.Errorf("the redirect's target received %d requests, want none", n)
	}
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'", relay.NotifyKind); n != 0 {
		t.Errorf("%d notifications completed by a redirect, want 0", n)
	}
	dl, err := b.relay.DeadLetters(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dl {
		if d.Kind != relay.NotifyKind {
			continue
		}
		seen++
		if d.Attempts != 2 || !strings.Contains(d.LastError, "redirect") || !strings.Contains(d.LastError, "127.0.0.2") {
			t.Errorf("dead letter %+v: want 2 attempts and an error naming the redirect and its host", d)
		}
		if strings.Contains(d.LastError, "redirect-token-s3cret") {
			t.Errorf("dead letter error shows the Location's token: %q", d.LastError)
		}
	}
	if seen != len(codes) {
		t.Errorf("%d notification dead letters, want %d", seen, len(codes))
	}
}
