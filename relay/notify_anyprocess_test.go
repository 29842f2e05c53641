package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/internal/pgtest"
	"github.com/payrecon/payrecon/internal/testkit"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// Issue 23, defect 6: a transition made by a process that was not given
// --notify-url (relay --drain, events --once, a run without it) is still
// notified, once notifications are configured for the database: its job is
// inserted in the transition's transaction, and the process that has the
// URL delivers it. Before any process had the URL, nothing is queued.
func TestTransitionsOfAProcessWithoutNotifyURLAreNotified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var got []payrecon.Notification
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var n payrecon.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)

	// This process has no URL. Its writer (the events road's, the
	// drain's) makes transitions; while no process ever had a URL, there is
	// nothing to notify.
	b := setup(t, testConfig(t))
	ids := pgtest.InsertPayments(t, b.pool, []pgtest.Payment{
		{IntentID: "pi_1", Status: payrecon.StatusPending}, {IntentID: "pi_2", Status: payrecon.StatusPending},
		{IntentID: "pi_3", Status: payrecon.StatusPending}, {IntentID: "pi_4", Status: payrecon.StatusPending},
	})
	apply := func(id int64) {
		t.Helper()
		err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			res, err := b.writer.ApplyFrom(ctx, tx, payrecon.ApplyPaymentSucceeded, postgres.PaymentRef{ID: id},
				payrecon.Origin{Source: payrecon.SourceEvents, Ref: "evt_test"})
			if err == nil && res.Outcome != payrecon.Applied {
				t.Errorf("payment %d: %s", id, res.Outcome)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	apply(ids[0])
	if n := pgtest.Count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = $1", relay.NotifyKind); n != 0 {
		t.Fatalf("%d notification jobs queued before notifications were configured, want 0", n)
	}

	// The running service has the URL (its own pool and writer: another process).
	cfg := testConfig(t)
	cfg.Notify = relay.NotifyConfig{URL: receiver.URL, Secret: "whsec_test"}
	notifier, err := relay.New(newPool(t, b.url, cfg.Workers+5), postgres.NewWriter(nil), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := notifier.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = notifier.Stop(context.Background()) })

	// The process without the URL makes three more transitions.
	for _, id := range ids[1:] {
		apply(id)
	}
	testkit.WaitFor(t, "the three transitions delivered", 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d notifications delivered, want 3", len(got))
	}
	want := map[int64]bool{ids[1]: true, ids[2]: true, ids[3]: true}
	for _, n := range got {
		if !want[n.PaymentID] || n.From != payrecon.StatusPending || n.To != payrecon.StatusPaid || n.Source != payrecon.SourceEvents {
			t.Errorf("notification %+v; want the later transitions", n)
		}
	}
}
