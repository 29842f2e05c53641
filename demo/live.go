package demo

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/payrecon/payrecon"
)

// liveEventsInterval is the events catch-up's interval in the demo: short,
// so that the demo is quick; the detection delay it reports is bounded by
// it (payrecon run's default is 30 s).
const liveEventsInterval = time.Second

// liveTimeout bounds the wait for the live events to be applied.
const liveTimeout = 60 * time.Second

// preServiceAge is how old the events of the webhook phase are made: older
// than the catch-up's first reach (72 h), so that the webhooks lost then are
// left to the sweep (the drift the table above reports), as they would be
// for a service started after them.
const preServiceAge = 96 * time.Hour

// shiftClock is the simulator's clock: the real time, shifted while the
// webhook phase plays in the past.
type shiftClock struct{ shift atomic.Int64 }

func (c *shiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.shift.Load())) }

func (c *shiftClock) set(d time.Duration) { c.shift.Store(int64(d)) }

// EventsReport is the live phase: intents that succeed while the service
// runs, just after the sweep passed their rows, with the webhook endpoint
// down for half of them.
type EventsReport struct {
	// Interval is the catch-up's interval in the demo.
	Interval time.Duration `json:"interval_ns"`
	// Events counts the live events; Lost those never delivered (the
	// endpoint was down), Delivered those the endpoint received.
	Events    int `json:"events"`
	Lost      int `json:"lost"`
	Delivered int `json:"delivered"`
	// CaughtUp counts the lost events the catch-up applied.
	CaughtUp int `json:"caught_up"`
	// AppliedTwice counts live rows moved more than once; Missed those
	// not paid at the end (or whose lost event was never processed).
	AppliedTwice int      `json:"applied_twice"`
	Missed       int      `json:"missed"`
	Samples      []string `json:"samples,omitempty"`
	// MedianDelay and MaxDelay run from a lost event's creation to the
	// catch-up applying it: the detection delay.
	MedianDelay time.Duration `json:"median_delay_ns"`
	MaxDelay    time.Duration `json:"max_delay_ns"`
	// SweepPassedAt is how many rows the sweep had passed when the live
	// events happened: without the catch-up they wait for its next cycle.
	SweepPassedAt int `json:"sweep_passed_at"`

	lostIDs []string
	movedAt map[string]time.Time
}

// livePhase moves the live intents to succeeded once the sweep passed their
// rows, delivers the webhooks of half of them to the service's endpoint (the
// endpoint is down for the others), and waits until every live row is paid.
func (r *runner) livePhase(ctx context.Context, httpAddr string, swept int) error {
	ev := &r.rep.Events
	ev.Interval, ev.SweepPassedAt, ev.movedAt = liveEventsInterval, swept, map[string]time.Time{}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	client := &http.Client{Timeout: 30 * time.Second, Transport: transport}
	defer client.CloseIdleConnections()
	d := &deliverer{sim: r.sim, url: "http://" + httpAddr + "/webhooks/stripe", secret: r.secret, connectSecret: r.connectSecret(), client: client}
	r.log.Info("live phase: intents succeed after the sweep passed their rows; the webhook endpoint is down for half of them",
		"events", len(r.plan.live), "catch_up_interval", liveEventsInterval)
	for pos, i := range r.plan.live {
		id, err := r.sim.SetStatus(r.plan.rows[i].intentID, payrecon.IntentSucceeded)
		if err != nil {
			return fmt.Errorf("live phase: %w", err)
		}
		ev.movedAt[id] = time.Now()
		ev.Events++
		if liveLost(pos) {
			ev.Lost++
			ev.lostIDs = append(ev.lostIDs, id)
			continue
		}
		if _, err := d.post(ctx, id); err != nil {
			return fmt.Errorf("live phase: deliver %s: %w", id, err)
		}
		ev.Delivered++
	}
	ids := make([]int64, len(r.plan.live))
	for k, i := range r.plan.live {
		ids[k] = r.ids[i]
	}
	deadline := time.Now().Add(liveTimeout)
	for {
		var paid int
		if err := r.pool.QueryRow(ctx, queries.Get("live_paid"), pgx.StrictNamedArgs{"ids": ids}).Scan(&paid); err != nil {
			return fmt.Errorf("live phase: %w", err)
		}
		if paid == len(ids) || time.Now().After(deadline) {
			if paid < len(ids) {
				r.log.Warn("live phase: not every live payment was paid in time", "paid", paid, "of", len(ids), "waited", liveTimeout)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
}

// collectLive checks the live rows (each moved exactly once, to paid) and
// measures the detection delay of the lost events.
func (r *runner) collectLive(ctx context.Context, final map[int64]rowState) error {
	ev := &r.rep.Events
	for _, i := range r.plan.live {
		id := r.ids[i]
		before, after := r.snap[id], final[id]
		switch {
		case after.status != payrecon.StatusPaid:
			ev.Missed++
			ev.Samples = sample(ev.Samples, fmt.Sprintf("live payment %d is %s v%d, want paid", id, after.status, after.version))
		case after.version != before.version+1:
			ev.AppliedTwice++
			ev.Samples = sample(ev.Samples, fmt.Sprintf("live payment %d moved from v%d to v%d: more than one transition", id, before.version, after.version))
		}
	}
	if len(ev.lostIDs) == 0 {
		return nil
	}
	res, err := r.pool.Query(ctx, queries.Get("live_events"), pgx.StrictNamedArgs{"event_ids": ev.lostIDs})
	if err != nil {
		return fmt.Errorf("read the live events: %w", err)
	}
	var (
		eventID, outcome string
		at               time.Time
		delays           []time.Duration
	)
	seen := map[string]bool{}
	if _, err := pgx.ForEachRow(res, []any{&eventID, &at, &outcome}, func() error {
		seen[eventID] = true
		if outcome != string(payrecon.Applied) {
			ev.Samples = sample(ev.Samples, fmt.Sprintf("lost event %s was processed with outcome %s, want applied", eventID, outcome))
			return nil
		}
		ev.CaughtUp++
		delays = append(delays, max(at.Sub(ev.movedAt[eventID]), 0))
		return nil
	}); err != nil {
		return fmt.Errorf("read the live events: %w", err)
	}
	for _, id := range ev.lostIDs {
		if !seen[id] {
			ev.Samples = sample(ev.Samples, fmt.Sprintf("lost event %s was never caught up", id))
		}
	}
	if len(delays) > 0 {
		slices.Sort(delays)
		ev.MedianDelay, ev.MaxDelay = delays[len(delays)/2], delays[len(delays)-1]
	}
	return nil
}
