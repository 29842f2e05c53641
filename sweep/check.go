package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/payrecon/payrecon"
)

// check classifies every row. Rows inside the grace window are in_flight
// without a call. In list and auto mode the batch's cursor rows are first
// matched against the PaymentIntents listed in their creation-time window;
// every row not seen there is retrieved by id, concurrently up to
// Config.Concurrency. A configuration error cancels the other calls and is
// returned; so is the caller's context error.
//
// readAt is the database's time of the batch's read, before any request:
// every answer read now carries it (Check.ReadAt); a listed intent served
// from the list cache carries the read time of the batch that listed it.
func (s *Sweeper) check(ctx context.Context, rows []payrecon.PaymentRow, now, readAt time.Time, more bool) ([]payrecon.Check, []payrecon.Orphan, int, error) {
	checks := make([]payrecon.Check, len(rows))
	var need, listable, sessionNeed, sessionListable []int
	for i, row := range rows {
		checks[i].Row = row
		if s.cfg.Grace > 0 && row.UpdatedAt.After(now.Add(-s.cfg.Grace)) {
			checks[i].Decision = payrecon.Decision{Verdict: payrecon.InFlight,
				Reason: "changed locally within the grace window; a webhook is probably on its way"}
			checks[i].RecheckAt, checks[i].RecheckReason = row.UpdatedAt.Add(s.cfg.Grace), payrecon.RecheckGrace
			continue
		}
		if row.IntentID == "" && row.SessionID == "" { // nothing to ask Stripe about: a fault in the local row
			checks[i].Decision = payrecon.InvalidLocalRow()
			continue
		}
		if row.IntentID == "" { // checked through its Checkout Session
			sessionNeed = append(sessionNeed, i)
			if !row.FromRecheck {
				sessionListable = append(sessionListable, i)
			}
			continue
		}
		need = append(need, i)
		if !row.FromRecheck { // rechecks are scattered in time: retrieved one by one
			listable = append(listable, i)
		}
	}

	calls := 0
	var listed map[string]payrecon.Intent
	var orphans []payrecon.Orphan
	if s.cfg.Mode != ModeRetrieve && len(listable) > 1 {
		var err error
		var n int
		listed, orphans, n, err = s.listFor(ctx, rows, listable, now, readAt, more)
		calls += n
		switch {
		case err == nil:
		case errors.Is(err, payrecon.ErrConfig):
			return nil, nil, calls, fmt.Errorf("list payment intents: %w", err)
		case ctx.Err() != nil:
			return nil, nil, calls, ctx.Err()
		default:
			// Retrieve every row instead; if Stripe is down, that says so row by row.
			s.cfg.Logger.Warn("listing failed; retrieving the batch one by one", "job", s.cfg.Job, "error", err)
			listed, orphans = nil, nil
		}
	}

	var listedSessions map[string]payrecon.Session
	if s.sessions != nil && s.cfg.Mode != ModeRetrieve && len(sessionListable) > 1 {
		var err error
		var n int
		listedSessions, n, err = s.listSessionsFor(ctx, rows, sessionListable, readAt, more)
		calls += n
		switch {
		case err == nil:
		case errors.Is(err, payrecon.ErrConfig):
			return nil, nil, calls, fmt.Errorf("list checkout sessions: %w", err)
		case ctx.Err() != nil:
			return nil, nil, calls, ctx.Err()
		default:
			s.cfg.Logger.Warn("listing checkout sessions failed; retrieving them one by one", "job", s.cfg.Job, "error", err)
			listedSessions = nil
		}
	}

	orphans = s.keepOrphans(orphans, listed)

	var retrieve []*payrecon.Check
	for _, i := range need {
		if in, ok := listed[rows[i].IntentID]; ok && in.Status != "" {
			checks[i].Observed, checks[i].ReadAt = in.Status, in.ReadAt
			checks[i].Decision = payrecon.Classify(rows[i].Status, in.Status)
			s.judgeMoney(&checks[i], in)
			continue
		}
		retrieve = append(retrieve, &checks[i])
	}
	for _, i := range sessionNeed {
		if cs, ok := listedSessions[rows[i].SessionID]; ok && cs.Status != "" {
			checks[i].ReadAt = cs.ReadAt
			if s.judgeSession(&checks[i], cs, now) {
				continue
			}
		}
		retrieve = append(retrieve, &checks[i])
	}
	calls += len(retrieve)
	if err := s.retrieveAll(ctx, retrieve, now, readAt); err != nil {
		if ctx.Err() != nil {
			return nil, nil, calls, ctx.Err()
		}
		return nil, nil, calls, err
	}
	for i := range checks {
		s.dropIgnored(&checks[i])
	}
	if len(sessionNeed) > 0 {
		s.sawSessions.Store(true)
	}
	if s.sawSessions.Load() && len(listable)+len(sessionListable) > 0 {
		return checks, s.deferOrphans(orphans, checks, rows, append(listable, sessionListable...), more), calls, nil
	}
	return checks, sessionOrphans(orphans, checks), calls, nil
}

// deferOrphans holds back, on a table with session rows, the listed
// PaymentIntents created after the batch's newest row: a session row
// created before such an intent may be in the next batches (its intent is
// created when the customer pays, after the row), and is then read there.
// Each is reported by the first batch whose rows reach its creation time,
// unless a session row of that batch (or payrecon_session_intents, at the
// commit) accounts for it, and every one at the end of the table (more
// false; a cycle that ends on a full batch reports them at its wrap).
func (s *Sweeper) deferOrphans(orphans []payrecon.Orphan, checks []payrecon.Check, rows []payrecon.PaymentRow, idx []int, more bool) []payrecon.Orphan {
	var horizon time.Time
	for _, i := range idx {
		if rows[i].CreatedAt.After(horizon) {
			horizon = rows[i].CreatedAt
		}
	}
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	all := sessionOrphans(append(s.pending, orphans...), checks)
	s.pending = nil
	seen := make(map[string]bool, len(all))
	var out []payrecon.Orphan
	for _, o := range all {
		switch {
		case seen[o.IntentID]:
		case more && o.Created.After(horizon):
			s.pending = append(s.pending, o)
		default:
			out = append(out, o)
		}
		seen[o.IntentID] = true
	}
	return out
}

// takePending returns, and forgets, the orphans deferOrphans still holds.
func (s *Sweeper) takePending() []payrecon.Orphan {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	p := s.pending
	s.pending = nil
	return p
}

// sessionOrphans drops the listed PaymentIntents that a session row of the
// batch accounts for: its session's intent, which the row does not record.
func sessionOrphans(orphans []payrecon.Orphan, checks []payrecon.Check) []payrecon.Orphan {
	if len(orphans) == 0 {
		return orphans
	}
	var ours map[string]bool
	for _, c := range checks {
		if c.Session != nil && c.Session.PaymentIntentID != "" {
			if ours == nil {
				ours = map[string]bool{}
			}
			ours[c.Session.PaymentIntentID] = true
		}
	}
	if ours == nil {
		return orphans
	}
	out := orphans[:0]
	for _, o := range orphans {
		if !ours[o.IntentID] {
			out = append(out, o)
		}
	}
	return out
}

// dropIgnored removes the kinds an operator ignores (--ignore-kinds) from a
// check: its status kind (and any repair with it) is not recorded; the
// verdict stays. Ignored money kinds are never judged (MoneyChecks).
func (s *Sweeper) dropIgnored(c *payrecon.Check) {
	if k := c.Decision.Kind; k != "" && s.cfg.Money.Ignore[k] {
		c.Decision.Kind, c.Decision.Command = "", ""
	}
}

// keepOrphans drops the orphans that are not payrecon's: all of them when
// missing_locally is ignored, and those whose intent lacks the
// --intent-metadata pairs.
func (s *Sweeper) keepOrphans(orphans []payrecon.Orphan, listed map[string]payrecon.Intent) []payrecon.Orphan {
	if s.cfg.Money.Ignore[payrecon.KindMissingLocally] {
		return nil
	}
	if len(s.cfg.IntentMetadata) == 0 {
		return orphans
	}
	out := orphans[:0]
	for _, o := range orphans {
		if IntentIsOurs(listed[o.IntentID], s.cfg.IntentMetadata) {
			out = append(out, o)
		}
	}
	return out
}

// IntentIsOurs reports whether the intent carries every metadata pair of
// want (--intent-metadata); any intent does when want is empty.
func IntentIsOurs(in payrecon.Intent, want map[string]string) bool {
	for k, v := range want {
		if got, ok := in.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// retrieveAll retrieves each check's row by id (checkOne), up to
// Config.Concurrency at once. A fixed set of workers takes the rows in turn
// (a goroutine per row would grow a fresh stack for every request's HTTP
// and JSON work: a tenth of a retrieve-mode sweep's CPU). The first error
// (a configuration error, the context's end) stops the others and is
// returned.
func (s *Sweeper) retrieveAll(ctx context.Context, checks []*payrecon.Check, now, readAt time.Time) error {
	if len(checks) == 0 {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(s.cfg.Concurrency, len(checks)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(checks) {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err // never a check left undone without an error
				}
				if err := s.checkOne(gctx, checks[i], now, readAt); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

func (s *Sweeper) checkOne(ctx context.Context, c *payrecon.Check, now, readAt time.Time) error {
	c.ReadAt = readAt
	if c.Row.IntentID == "" && c.Row.SessionID != "" {
		return s.checkSession(ctx, c, now)
	}
	release, err := s.slot(ctx)
	if err != nil {
		return err
	}
	intent, err := s.gateway.RetrieveIntent(ctx, c.Row.IntentID)
	release()
	switch {
	case err == nil:
		s.limiterSuccess()
		c.Observed = intent.Status
		if c.Observed == "" { // a malformed answer is not an observation
			s.unverifiable(c, now, errors.New("stripe returned a PaymentIntent without a status"))
			return nil
		}
	case errors.Is(err, payrecon.ErrNotFound):
		s.limiterSuccess()
		c.Observed = payrecon.NotFound
	case errors.Is(err, payrecon.ErrConfig):
		return fmt.Errorf("check payment %d (%s): %w", c.Row.ID, c.Row.IntentID, err)
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		s.noteRateLimit(err)
		s.unverifiable(c, now, err)
		return nil
	}
	c.Decision = payrecon.Classify(c.Row.Status, c.Observed)
	if c.Observed != payrecon.NotFound {
		s.judgeMoney(c, intent)
	}
	return nil
}

// judgeMoney runs the money checks on a row whose PaymentIntent was read:
// the kinds judged (those not ignored, whose local column was read, and
// whose charge was expanded) and the drifts among them.
func (s *Sweeper) judgeMoney(c *payrecon.Check, in payrecon.Intent) {
	c.Intent = &in
	mc := s.cfg.Money
	var money payrecon.LocalMoney
	if c.Row.Money != nil {
		money = *c.Row.Money
	} else {
		mc.Amount, mc.Currency = false, false
	}
	c.Judged = mc.Evaluated(money, in)
	if len(c.Judged) == 0 {
		return
	}
	for _, d := range payrecon.ClassifyMoney(c.Row.Status, money, in) {
		if slices.Contains(c.Judged, d.Kind) {
			c.Drifts = append(c.Drifts, d)
		}
	}
}

func (s *Sweeper) limiterSuccess() {
	if s.cfg.Limiter != nil {
		s.cfg.Limiter.OnSuccess()
	}
}

func (s *Sweeper) unverifiable(c *payrecon.Check, now time.Time, err error) {
	c.Observed = ""
	c.Err = err.Error()
	c.Decision = payrecon.Decision{Verdict: payrecon.Unverifiable, Reason: "Stripe could not be asked: " + c.Err}
	backoff := s.cfg.RecheckBackoff
	for i := 0; i < c.Row.Rechecks && backoff < s.cfg.RecheckBackoffMax; i++ {
		backoff *= 2
	}
	c.RecheckAt, c.RecheckReason = now.Add(min(backoff, s.cfg.RecheckBackoffMax)), payrecon.RecheckUnverifiable
}
