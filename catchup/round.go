package catchup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/payrecon/payrecon"
)

// Report says what one round (or RunOnce) did.
type Report struct {
	Job string `json:"job"`
	// Listed counts the events read from Stripe; Processed those fed to
	// the processor (or refused) and passed by the cursor.
	Listed    int `json:"listed"`
	Processed int `json:"processed"`
	// Outcomes counts the processed events by outcome (the processor's,
	// or duplicate, or refused).
	Outcomes map[string]int `json:"outcomes"`
	// Late counts the processed events found behind the cursor, in the
	// overlap: listed by Stripe only after newer ones (also in Processed);
	// Relisted the overlap's events that had been processed already.
	Late     int `json:"late"`
	Relisted int `json:"relisted"`
	// Requests counts the requests made to Stripe.
	Requests int `json:"stripe_requests"`
	// MaxDelay is the largest detection delay (Stripe's created → applied)
	// of the events this round recorded first.
	MaxDelay time.Duration `json:"max_delay_ns"`
	// Cursor is the cursor's event after the round ("" for none).
	Cursor string `json:"cursor,omitempty"`
	// Reset is set when the round restarted the cursor from a time.
	Reset *payrecon.EventCursorReset `json:"reset,omitempty"`
	// UpToDate is true when the round reached the newest event.
	UpToDate bool          `json:"up_to_date"`
	Duration time.Duration `json:"duration_ns"`
}

// errStop ends a round without an error: another catcher moved the cursor.
var errStop = errors.New("stop round")

// Round catches up once, without the lease: from the cursor to the newest
// event, processing each one oldest first and moving the cursor past it.
// It returns early (with what it did) on ctx's end, an error of the
// processor or the store, or Stripe's; a cursor another catcher moved is
// not an error (the round stops, and that catcher goes on).
func (c *Catcher) Round(ctx context.Context) (Report, error) {
	start := c.cfg.Clock.Now()
	rep := Report{Job: c.cfg.Job, Outcomes: map[string]int{}}
	defer func() { rep.Duration = c.cfg.Clock.Now().Sub(start) }()
	err := c.round(ctx, &rep)
	if errors.Is(err, errStop) || errors.Is(err, payrecon.ErrConcurrentRun) {
		c.cfg.Logger.Warn("another catcher moved the events cursor; this round stops", "job", c.cfg.Job)
		c.metrics.rounds.WithLabelValues("concurrent_run").Inc()
		return rep, nil
	}
	switch {
	case err == nil:
		c.metrics.rounds.WithLabelValues("ok").Inc()
	case errors.Is(err, payrecon.ErrUnavailable):
		c.metrics.rounds.WithLabelValues("unavailable").Inc()
	case ctx.Err() == nil:
		c.metrics.rounds.WithLabelValues("error").Inc()
	}
	return rep, err
}

func (c *Catcher) round(ctx context.Context, rep *Report) error {
	now := c.cfg.Clock.Now()
	cur, err := c.store.ReadEventCursor(ctx, c.cfg.Job, now.Add(-c.cfg.Since).Truncate(time.Second), now)
	if err != nil {
		return err
	}
	if expired(cur, now.Add(-payrecon.EventRetention)) {
		if cur, err = c.reset(ctx, rep, cur, "the cursor is older than Stripe keeps events (30 days)"); err != nil {
			return err
		}
	}
	for resets := 0; ; resets++ {
		err := c.walk(ctx, rep, &cur)
		if !errors.Is(err, payrecon.ErrNotFound) || cur.EventID == "" || resets > 0 {
			rep.Cursor = cur.EventID
			return err
		}
		// Stripe no longer has the cursor's event (or never had it: another
		// account, another mode): restart from what is known covered.
		if cur, err = c.reset(ctx, rep, cur, "Stripe refused the cursor's event"); err != nil {
			return err
		}
	}
}

// expired reports whether the cursor reaches further back than Stripe keeps
// events (edge: now minus 30 days).
func expired(cur payrecon.EventCursor, edge time.Time) bool {
	if cur.EventID != "" {
		return cur.EventCreated.Before(edge)
	}
	return cur.StartFrom.Before(edge)
}

// covered is the time up to which every event is known processed.
func covered(cur payrecon.EventCursor) time.Time {
	t := cur.StartFrom
	if cur.EventID != "" {
		t = cur.EventCreated
	}
	if !cur.CheckedAt.IsZero() {
		if c := cur.CheckedAt.Add(-checkOverlap); c.After(t) {
			t = c
		}
	}
	return t
}

// reset restarts the cursor from the later of what is known covered and
// the 30-day bound (less the margin); what lies between the covered time and
// the bound is lost.
func (c *Catcher) reset(ctx context.Context, rep *Report, cur payrecon.EventCursor, reason string) (payrecon.EventCursor, error) {
	now := c.cfg.Clock.Now()
	bound := now.Add(-MaxSince)
	from := covered(cur)
	r := payrecon.EventCursorReset{Job: c.cfg.Job, From: cur.EventID, StartFrom: from.Truncate(time.Second), Reason: reason, Now: now}
	if from.Before(bound) {
		r.StartFrom, r.LostFrom, r.LostTo = bound.Truncate(time.Second), from, bound
	}
	if err := c.store.ResetEventCursor(ctx, r); err != nil {
		return cur, err
	}
	rep.Reset = &r
	label := "refused"
	if cur.EventID == "" || cur.EventCreated.Before(bound) {
		label = "expired"
	}
	c.metrics.resets.WithLabelValues(label).Inc()
	attrs := []any{"job", c.cfg.Job, "reason", reason, "cursor_event_id", cur.EventID, "restart_from", r.StartFrom}
	if r.LostFrom.IsZero() {
		c.cfg.Logger.Info("events cursor restarted; nothing was lost", attrs...)
	} else {
		c.cfg.Logger.Warn("events cursor restarted from Stripe's 30-day bound: events created in between were not caught up; the sweep will find their drift",
			append(attrs, "lost_from", r.LostFrom, "lost_to", r.LostTo)...)
	}
	return payrecon.EventCursor{Job: c.cfg.Job, StartFrom: r.StartFrom, CheckedAt: cur.CheckedAt}, nil
}

// walk processes every event after the cursor, oldest first. Without an
// event in the cursor it first walks back from the newest event to the
// oldest one created at or after StartFrom (Stripe lists newest first) and
// starts there.
func (c *Catcher) walk(ctx context.Context, rep *Report, cur *payrecon.EventCursor) error {
	if cur.EventID != "" {
		done, err := c.overlap(ctx, rep, cur)
		if err != nil {
			return err
		}
		if done {
			return c.checked(ctx, rep, cur)
		}
	}
	if cur.EventID == "" {
		page, err := c.oldestPage(ctx, rep, cur.StartFrom)
		if err != nil {
			return err
		}
		if err := c.apply(ctx, rep, cur, page.Events); err != nil {
			return err
		}
		if cur.EventID == "" { // nothing since StartFrom
			return c.checked(ctx, rep, cur)
		}
	}
	for {
		page, err := c.list(ctx, rep, payrecon.EventQuery{Types: c.cfg.Types, EndingBefore: cur.EventID, Limit: pageSize})
		if err != nil {
			return err
		}
		if err := c.apply(ctx, rep, cur, page.Events); err != nil {
			return err
		}
		if !page.HasMore {
			return c.checked(ctx, rep, cur)
		}
		if len(page.Events) == 0 {
			return fmt.Errorf("list events before %s: an empty page that says more follow", cur.EventID)
		}
	}
}

// overlap lists the events created from Overlap before the cursor's event
// and processes those not processed yet (listed late: Stripe showed newer
// ones first), without moving the cursor. When one page holds everything
// from there to the newest event (the usual case), its events newer than
// the cursor are applied too, moving it, and done is true: the round made
// one request. Otherwise only the overlap is handled here and the walk
// goes on from the cursor.
func (c *Catcher) overlap(ctx context.Context, rep *Report, cur *payrecon.EventCursor) (done bool, err error) {
	from := cur.EventCreated.Add(-c.cfg.Overlap)
	page, err := c.list(ctx, rep, payrecon.EventQuery{Types: c.cfg.Types, CreatedGTE: from, Limit: pageSize})
	if err != nil {
		return false, err
	}
	if !page.HasMore {
		var newer, older []payrecon.RawEvent
		at := slices.IndexFunc(page.Events, func(e payrecon.RawEvent) bool { return e.ID == cur.EventID })
		if at >= 0 {
			newer, older = page.Events[:at], page.Events[at+1:]
		} else {
			for i, e := range page.Events {
				if !e.Created.After(cur.EventCreated) {
					newer, older = page.Events[:i], page.Events[i:]
					break
				}
				newer = page.Events[:i+1]
			}
		}
		if err := c.late(ctx, rep, cur, older); err != nil {
			return false, err
		}
		return true, c.apply(ctx, rep, cur, newer)
	}
	// Busy: the overlap alone, page by page, then the walk. Events listed
	// before the cursor's own (in its second, newer in Stripe's order) are
	// the walk's; until the cursor's event shows, only those of earlier
	// seconds are surely behind it.
	q := payrecon.EventQuery{Types: c.cfg.Types, CreatedGTE: from, CreatedLT: cur.EventCreated.Add(time.Second), Limit: pageSize}
	passed := false
	for {
		page, err := c.list(ctx, rep, q)
		if err != nil {
			return false, err
		}
		behind := page.Events
		if !passed {
			if at := slices.IndexFunc(page.Events, func(e payrecon.RawEvent) bool { return e.ID == cur.EventID }); at >= 0 {
				passed, behind = true, page.Events[at+1:]
			} else {
				behind = nil
				for i, e := range page.Events {
					if e.Created.Before(cur.EventCreated.Truncate(time.Second)) {
						behind = page.Events[i:]
						break
					}
				}
			}
		}
		if err := c.late(ctx, rep, cur, behind); err != nil {
			return false, err
		}
		if !page.HasMore || len(page.Events) == 0 {
			return false, nil
		}
		q.StartingAfter = page.Events[len(page.Events)-1].ID
	}
}

// late processes, oldest first, the events of a page behind the cursor
// that were not processed yet, counting each outcome on the cursor without
// moving it.
func (c *Catcher) late(ctx context.Context, rep *Report, cur *payrecon.EventCursor, events []payrecon.RawEvent) error {
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.ID)
	}
	seen, err := c.store.ProcessedEvents(ctx, ids)
	if err != nil {
		return err
	}
	for i := len(events) - 1; i >= 0; i-- {
		raw := events[i]
		if raw.ID == cur.EventID || seen[raw.ID] {
			rep.Relisted++
			continue
		}
		adv, err := c.process(ctx, raw, cur)
		if err != nil {
			return err
		}
		if adv.Outcome != OutcomeDuplicate {
			c.cfg.Logger.Info("an event Stripe listed late was caught up behind the cursor", "job", c.cfg.Job,
				"event_id", payrecon.Quote(raw.ID, 60), "event_type", payrecon.Quote(raw.Type, 60), "outcome", adv.Outcome)
		}
		if err := c.store.CountEventOutcome(ctx, adv); err != nil {
			return err
		}
		rep.Late++
		c.count(rep, adv)
	}
	return nil
}

// count adds one processed event to the round's report and the metrics.
func (c *Catcher) count(rep *Report, adv payrecon.EventAdvance) {
	rep.Processed++
	rep.Outcomes[adv.Outcome]++
	c.metrics.events.WithLabelValues(adv.Outcome).Inc()
	if adv.Delay > 0 {
		c.metrics.delay.Observe(adv.Delay.Seconds())
		rep.MaxDelay = max(rep.MaxDelay, adv.Delay)
	}
}

func (c *Catcher) checked(ctx context.Context, rep *Report, cur *payrecon.EventCursor) error {
	now := c.cfg.Clock.Now()
	if err := c.store.MarkEventCursorChecked(ctx, c.cfg.Job, cur.EventID, now); err != nil {
		return err
	}
	cur.CheckedAt = now
	rep.UpToDate = true
	return nil
}

// oldestPage walks back from the newest event created at or after from to
// the oldest page, and returns it (newest first, as listed). Only one page
// is held at a time.
func (c *Catcher) oldestPage(ctx context.Context, rep *Report, from time.Time) (payrecon.EventPage, error) {
	q := payrecon.EventQuery{Types: c.cfg.Types, CreatedGTE: from, Limit: pageSize}
	for {
		page, err := c.list(ctx, rep, q)
		if err != nil {
			return page, err
		}
		if !page.HasMore || len(page.Events) == 0 {
			return page, nil
		}
		q.StartingAfter = page.Events[len(page.Events)-1].ID
	}
}

// list makes one request within the rate budget.
func (c *Catcher) list(ctx context.Context, rep *Report, q payrecon.EventQuery) (payrecon.EventPage, error) {
	if c.cfg.Limiter != nil {
		if err := c.cfg.Limiter.Wait(ctx); err != nil {
			return payrecon.EventPage{}, err
		}
	}
	rep.Requests++
	page, err := c.source.ListEvents(ctx, q)
	if err != nil {
		var ue *payrecon.UnavailableError
		if errors.As(err, &ue) && ue.RateLimited && c.cfg.Limiter != nil {
			c.cfg.Limiter.OnRateLimited(ue.RetryAfter)
		}
		return page, err
	}
	if c.cfg.Limiter != nil {
		c.cfg.Limiter.OnSuccess()
	}
	rep.Listed += len(page.Events)
	return page, nil
}

// process feeds one listed event to the processor (or refuses it) and
// returns the cursor advance past it, outcome and delay filled in.
func (c *Catcher) process(ctx context.Context, raw payrecon.RawEvent, cur *payrecon.EventCursor) (payrecon.EventAdvance, error) {
	adv := payrecon.EventAdvance{Job: c.cfg.Job, From: cur.EventID, To: raw.ID, ToCreated: raw.Created, Fence: c.fence.Load()}
	ev, err := payrecon.ParseEvent(raw.JSON)
	if err != nil {
		// A webhook would be answered 400 and never retried into
		// success: skip it, loudly.
		adv.Outcome = OutcomeRefused
		c.cfg.Logger.Warn("listed event refused; skipped", "job", c.cfg.Job, "event_id", payrecon.Quote(raw.ID, 60),
			"event_type", payrecon.Quote(raw.Type, 60), "reason", err.Error())
		adv.Now = c.cfg.Clock.Now()
		return adv, nil
	}
	res, err := c.proc.ProcessEvent(ctx, ev)
	if err != nil {
		return adv, fmt.Errorf("process event %s: %w", ev.ID, err)
	}
	adv.Outcome = res.Outcome
	if res.Duplicate {
		adv.Outcome = OutcomeDuplicate
	} else {
		adv.Delay = max(c.cfg.Clock.Now().Sub(raw.Created), time.Nanosecond)
		attrs := []any{"job", c.cfg.Job, "event_id", ev.ID, "event_type", ev.Type, "outcome", res.Outcome,
			"delay", adv.Delay.Round(time.Millisecond)}
		if res.PaymentID != 0 {
			attrs = append(attrs, "payment_id", res.PaymentID)
		}
		if res.FindingID != 0 {
			attrs = append(attrs, "finding_id", res.FindingID)
		}
		c.cfg.Logger.Info("event caught up", attrs...)
	}
	adv.Now = c.cfg.Clock.Now()
	return adv, nil
}

// apply processes a page's events oldest first (the page is newest first),
// moving the cursor past each. An event this catcher processed is counted
// (report, metrics, the cursor's outcomes) even when another catcher moved
// the cursor past it first: the other one saw it as a duplicate.
func (c *Catcher) apply(ctx context.Context, rep *Report, cur *payrecon.EventCursor, events []payrecon.RawEvent) error {
	for i := len(events) - 1; i >= 0; i-- {
		raw := events[i]
		adv, err := c.process(ctx, raw, cur)
		if err != nil {
			return err
		}
		if err := c.store.AdvanceEventCursor(ctx, adv); err != nil {
			if !errors.Is(err, payrecon.ErrConcurrentRun) {
				return err
			}
			if adv.Outcome != OutcomeDuplicate {
				if err := c.store.CountEventOutcome(ctx, adv); err != nil {
					return err
				}
				c.count(rep, adv)
			}
			return errStop
		}
		cur.EventID, cur.EventCreated = raw.ID, raw.Created
		c.count(rep, adv)
	}
	return nil
}
