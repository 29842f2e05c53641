package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
)

// Session rows. A row that records a Checkout Session and no PaymentIntent
// is checked through its session, at the cost of an intent row: retrieved
// with its PaymentIntent and the intent's charge expanded (one request), or
// in list mode listed by created, 100 per request, by the same spans and
// lookahead as the intents (a lister of its own), with the same fall-back
// to retrieval for the rows not seen. The session table
// (payrecon.JudgeSession) gives the Stripe side; the decision table and the
// money rules judge it as for an intent row, and the commit is the same.

// listSessionsFor lists the Checkout Sessions created in the window of
// rows[idx] and returns them by id (nil, and no error, when listing is not
// worth it); each carries readAt (Session.ReadAt) as a listed intent does.
func (s *Sweeper) listSessionsFor(ctx context.Context, rows []payrecon.PaymentRow, idx []int, readAt time.Time, more bool) (map[string]payrecon.Session, int, error) {
	lo, hi, step, maxPages, ok, err := s.listPlan(ctx, rows, idx)
	if err != nil || !ok {
		return nil, 0, err
	}
	spans, calls := s.listWindow(ctx, &s.sessionLister, lo, hi, readAt, step, maxPages)
	got := map[string]payrecon.Session{}
	for _, sp := range spans {
		if sp.err != nil {
			return nil, calls, sp.err
		}
		for _, cs := range sp.sessions {
			if !cs.Created.Before(lo) && !cs.Created.After(hi) {
				got[cs.ID] = cs
			}
		}
	}
	if more {
		s.lookahead(&s.sessionLister, lo, hi, denser(step, lo, hi, len(got)), readAt)
	}
	return got, calls, nil
}

// judgeSession classifies a session row from its session: false when the
// session's PaymentIntent decides and came back unexpanded (an id only),
// so that the row is retrieved instead (or, retrieved, unverifiable).
func (s *Sweeper) judgeSession(c *payrecon.Check, cs payrecon.Session, now time.Time) bool {
	j := payrecon.JudgeSession(c.Row.Status, cs, now)
	if j.Observed == "" {
		return false
	}
	c.Session = &cs
	c.Observed, c.Decision = j.Observed, j.Decision
	if j.Intent != nil {
		s.judgeMoney(c, *j.Intent)
	}
	return true
}

// checkSession retrieves a session row's Checkout Session and judges it;
// errors are treated as checkOne treats an intent's.
func (s *Sweeper) checkSession(ctx context.Context, c *payrecon.Check, now time.Time) error {
	if s.sessions == nil {
		s.unverifiable(c, now, errors.New("the Stripe gateway cannot read Checkout Sessions"))
		return nil
	}
	release, err := s.slot(ctx)
	if err != nil {
		return err
	}
	cs, err := s.sessions.RetrieveSession(ctx, c.Row.SessionID)
	release()
	switch {
	case err == nil:
		s.limiterSuccess()
		switch {
		case cs.Status == "":
			s.unverifiable(c, now, errors.New("stripe returned a Checkout Session without a status"))
		case !s.judgeSession(c, cs, now):
			s.unverifiable(c, now, fmt.Errorf("checkout session %s: its PaymentIntent %s came back unexpanded", cs.ID, cs.PaymentIntentID))
		}
	case errors.Is(err, payrecon.ErrNotFound):
		s.limiterSuccess()
		c.Observed = payrecon.NotFound
		c.Decision = payrecon.Classify(c.Row.Status, payrecon.NotFound)
		c.Decision.Reason = fmt.Sprintf("no such Checkout Session %s in Stripe: %s", c.Row.SessionID, c.Decision.Reason)
	case errors.Is(err, payrecon.ErrConfig):
		return fmt.Errorf("check payment %d (%s): %w", c.Row.ID, c.Row.SessionID, err)
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		s.noteRateLimit(err)
		s.unverifiable(c, now, err)
	}
	return nil
}
