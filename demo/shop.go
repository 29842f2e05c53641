package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/relay"
)

// NotificationReport is the shop's side of the demo: the application that
// hears every transition (relay.NotifyConfig), fails the first delivery of
// one notification in ten, and fulfils each paid order once.
type NotificationReport struct {
	// Transitions counts the rows of payment_transitions; Acknowledged the
	// distinct notifications the shop answered 2xx.
	Transitions  int `json:"transitions"`
	Acknowledged int `json:"acknowledged"`
	// RefusedFirst counts first deliveries the shop failed on purpose (one
	// in ten); Redelivered the deliveries it had seen before (the retries
	// of those, or a redelivery after a lost acknowledgement).
	RefusedFirst int `json:"refused_first"`
	Redelivered  int `json:"redelivered"`
	// BadSignatures counts deliveries VerifyNotification rejected.
	BadSignatures int `json:"bad_signatures"`
	// PaidOrders counts the payments with a transition to paid;
	// FulfilledOnce those the shop fulfilled exactly once, FulfilledTwice
	// more than once, NotFulfilled never.
	PaidOrders     int `json:"paid_orders"`
	FulfilledOnce  int `json:"fulfilled_once"`
	FulfilledTwice int `json:"fulfilled_twice"`
	NotFulfilled   int `json:"not_fulfilled"`
	// OutOfOrder counts notifications that arrived before an earlier
	// version of the same payment had been acknowledged.
	OutOfOrder int `json:"out_of_order"`
	// MedianDelay and MaxDelay run from the transition to its first
	// acknowledgement.
	MedianDelay time.Duration `json:"median_delay_ns"`
	MaxDelay    time.Duration `json:"max_delay_ns"`
}

// problems lists what is wrong with the notifications.
func (n NotificationReport) problems() []string {
	var out []string
	if n.Acknowledged != n.Transitions {
		out = append(out, fmt.Sprintf("notifications: %d of %d transitions acknowledged by the shop", n.Acknowledged, n.Transitions))
	}
	if n.FulfilledOnce != n.PaidOrders {
		out = append(out, fmt.Sprintf("notifications: %d of %d paid orders fulfilled exactly once (%d twice, %d never)",
			n.FulfilledOnce, n.PaidOrders, n.FulfilledTwice, n.NotFulfilled))
	}
	if n.BadSignatures > 0 {
		out = append(out, fmt.Sprintf("notifications: %d bad signatures", n.BadSignatures))
	}
	if n.OutOfOrder > 0 {
		out = append(out, fmt.Sprintf("notifications: %d out of version order", n.OutOfOrder))
	}
	if n.Transitions >= 10 && n.RefusedFirst == 0 {
		out = append(out, "notifications: the shop never refused a delivery (the retry was not exercised)")
	}
	return out
}

// shop is the receiving application.
type shop struct {
	secret string
	srv    *http.Server
	url    string
	served chan error

	mu        sync.Mutex
	attempts  map[int64]int
	acked     map[int64]time.Time
	versions  map[int64]int64 // payment → last acknowledged version
	fulfilled map[string]int  // order → fulfilments
	rep       NotificationReport
}

// startShop listens on a loopback port.
func startShop(secret string) (*shop, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the shop: %w", err)
	}
	s := &shop{secret: secret, url: "http://" + ln.Addr().String() + "/payrecon", served: make(chan error, 1),
		attempts: map[int64]int{}, acked: map[int64]time.Time{}, versions: map[int64]int64{}, fulfilled: map[string]int{}}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

func (s *shop) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	if err := <-s.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = err // the demo's verdict comes from what the shop recorded
	}
}

// handle is the shop's endpoint: verify, dedupe by id, fulfil once.
func (s *shop) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := payrecon.VerifyNotification(body, r.Header.Get(payrecon.SignatureHeader), s.secret, 5*time.Minute); err != nil {
		s.rep.BadSignatures++
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var n payrecon.Notification
	if err := json.Unmarshal(body, &n); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.attempts[n.ID]++
	if n.ID%10 == 0 && s.attempts[n.ID] == 1 {
		s.rep.RefusedFirst++
		http.Error(w, "the shop is busy", http.StatusServiceUnavailable)
		return
	}
	if _, seen := s.acked[n.ID]; seen {
		s.rep.Redelivered++
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if s.attempts[n.ID] > 1 {
		s.rep.Redelivered++
	}
	if n.Version != s.versions[n.PaymentID]+1 && s.versions[n.PaymentID] != 0 {
		s.rep.OutOfOrder++
	}
	s.versions[n.PaymentID] = n.Version
	s.acked[n.ID] = time.Now()
	if n.To == payrecon.StatusPaid {
		s.fulfilled[n.OrderID]++
	}
	w.WriteHeader(http.StatusNoContent)
}

// notifyConfig is the service's side: every transition to the shop.
func (s *shop) notifyConfig() relay.NotifyConfig {
	return relay.NotifyConfig{URL: s.url, Secret: s.secret, Workers: notifyWorkers}
}

// waitDelivered waits until no notification job is left to run.
func (r *runner) waitDelivered(ctx context.Context) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		var waiting int
		if err := r.pool.QueryRow(ctx, queries.Get("notify_queue"), pgx.StrictNamedArgs{"kind": relay.NotifyKind}).Scan(&waiting); err != nil {
			return fmt.Errorf("read the notifications' queue: %w", err)
		}
		if waiting == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d notifications to be delivered: %w", waiting, ctx.Err())
		}
	}
}

// collectNotifications reads the transitions and compares the shop's
// record with them.
func (r *runner) collectNotifications(ctx context.Context) error {
	rows, err := r.pool.Query(ctx, queries.Get("transitions"))
	if err != nil {
		return fmt.Errorf("read transitions: %w", err)
	}
	type tr struct {
		id    int64
		order string
		to    payrecon.LocalStatus
		at    time.Time
	}
	ts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (tr, error) {
		var t tr
		err := row.Scan(&t.id, &t.order, &t.to, &t.at)
		return t, err
	})
	if err != nil {
		return fmt.Errorf("read transitions: %w", err)
	}
	s := r.shop
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.rep
	n.Transitions = len(ts)
	var delays []time.Duration
	for _, t := range ts {
		if at, ok := s.acked[t.id]; ok {
			n.Acknowledged++
			delays = append(delays, at.Sub(t.at))
		}
		if t.to != payrecon.StatusPaid {
			continue
		}
		n.PaidOrders++
		switch s.fulfilled[t.order] {
		case 0:
			n.NotFulfilled++
		case 1:
			n.FulfilledOnce++
		default:
			n.FulfilledTwice++
		}
	}
	n.MedianDelay, n.MaxDelay = medianMax(delays)
	r.rep.Notifications = n
	return nil
}

// medianMax returns the median and the maximum of ds (zero when empty).
func medianMax(ds []time.Duration) (median, maxDelay time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)-1]
}
