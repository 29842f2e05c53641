package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/payrecon/payrecon"
)

// Mode chooses how the sweep asks Stripe about a batch.
type Mode string

// The modes.
const (
	// ModeRetrieve asks for each row's PaymentIntent by id: one request per
	// row.
	ModeRetrieve Mode = "retrieve"
	// ModeList lists the PaymentIntents created in the batch's time window,
	// 100 per request, matches them by id, and retrieves one by one only
	// the rows it did not see. Correctness never depends on timestamps.
	ModeList Mode = "list"
	// ModeAuto lists when the local rows say it is cheaper: when the
	// PaymentIntents expected in the window fit in fewer than half as many
	// list requests as the batch has rows.
	ModeAuto Mode = "auto"
)

// ParseMode parses a --mode value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeRetrieve, ModeList, ModeAuto:
		return m, nil
	case "":
		return ModeAuto, nil
	}
	return "", fmt.Errorf("mode %q: want retrieve, list or auto", s)
}

const listPageSize = 100

// listCache keeps the intents of the last listed window, so that the next
// batch, whose window overlaps it, lists only what is new. Entries are never
// used older than the cache's maxAge, which is below the grace window: a
// local change made after the listing is then still inside the grace window
// and not judged against the older answer.
type listCache struct {
	mu      sync.Mutex
	lo, hi  time.Time // covered window, whole seconds, inclusive
	at      time.Time // when the oldest entry was read
	intents map[string]payrecon.Intent
}

// listFor lists the PaymentIntents created in the window of rows[idx] and
// returns them by id, with the intents that may have no local row. It
// returns nil (and no error) when listing is not worth it; the caller
// retrieves whatever is not in the result. Each intent listed now carries
// readAt (the database's time before the request) in Intent.ReadAt; one
// served from the cache keeps the time of the batch that listed it.
func (s *Sweeper) listFor(ctx context.Context, rows []payrecon.PaymentRow, idx []int, now, readAt time.Time) (map[string]payrecon.Intent, []payrecon.Orphan, int, error) {
	lo, hi := rows[idx[0]].CreatedAt, rows[idx[0]].CreatedAt
	for _, i := range idx[1:] {
		c := rows[i].CreatedAt
		if c.Before(lo) {
			lo = c
		}
		if c.After(hi) {
			hi = c
		}
	}
	lo = lo.Add(-s.cfg.ListSkew).Truncate(time.Second)
	hi = hi.Add(s.cfg.ListSkew + time.Second - 1).Truncate(time.Second)

	// The page budget: in auto mode from the local rows in the window (an
	// estimate of Stripe's), and list only if clearly cheaper; in list mode
	// never more requests than retrieving every row would take.
	maxPages := len(idx)
	if s.cfg.Mode == ModeAuto {
		// Counting further than where listing stops paying off is wasted.
		est, err := s.store.CountCreatedBetween(ctx, lo, hi, int64(len(idx))*listPageSize/2)
		if err != nil {
			return nil, nil, 0, err
		}
		pages := int(est/listPageSize) + 1
		if 2*pages > len(idx) {
			return nil, nil, 0, nil
		}
		maxPages = 2*pages + 2
	}

	s.cache.mu.Lock()
	defer s.cache.mu.Unlock()
	got := map[string]payrecon.Intent{}
	from, oldest := lo, s.cfg.Clock.Now()
	maxAge := min(30*time.Second, max(s.cfg.Grace, 0))
	if c := &s.cache; c.intents != nil && s.cfg.Clock.Now().Sub(c.at) < maxAge && !c.lo.After(lo) && !c.hi.Before(lo) {
		for id, in := range c.intents {
			if !in.Created.Before(lo) && !in.Created.After(hi) {
				got[id] = in
			}
		}
		from, oldest = c.hi.Add(time.Second), c.at
	}
	calls := 0
	complete := true
	if !from.After(hi) {
		q := payrecon.ListQuery{CreatedGTE: from, CreatedLTE: hi, Limit: listPageSize}
		for {
			if calls >= maxPages {
				complete = false // the window holds far more than expected: retrieve the rest
				break
			}
			if s.cfg.Limiter != nil {
				if err := s.cfg.Limiter.Wait(ctx); err != nil {
					return nil, nil, calls, err
				}
			}
			page, err := s.gateway.ListIntents(ctx, q)
			calls++
			if err != nil {
				s.noteRateLimit(err)
				s.cache.intents = nil
				return nil, nil, calls, err
			}
			s.limiterSuccess()
			for _, in := range page.Intents {
				in.ReadAt = readAt
				got[in.ID] = in
			}
			if !page.HasMore || len(page.Intents) == 0 {
				break
			}
			q.StartingAfter = page.Intents[len(page.Intents)-1].ID
		}
	}
	if complete {
		s.cache.lo, s.cache.hi, s.cache.at, s.cache.intents = lo, hi, oldest, got
	} else {
		s.cache.intents = nil
	}

	inBatch := make(map[string]bool, len(rows))
	for _, r := range rows {
		inBatch[r.IntentID] = true
	}
	var orphans []payrecon.Orphan
	settled := now.Add(-max(s.cfg.Grace, 0))
	for _, in := range got {
		// Only what the window asked for (a server that ignores the filter,
		// as stripe-mock does, must not produce orphans), and not an intent
		// created moments ago, whose local row may not be written yet.
		inWindow := !in.Created.Before(lo) && !in.Created.After(hi)
		if inWindow && !inBatch[in.ID] && in.Created.Before(settled) && in.Status != "" {
			orphans = append(orphans, payrecon.Orphan{IntentID: in.ID, Status: in.Status, Created: in.Created})
		}
	}
	return got, orphans, calls, nil
}

func (s *Sweeper) noteRateLimit(err error) {
	var ue *payrecon.UnavailableError
	if errors.As(err, &ue) && ue.RateLimited && s.cfg.Limiter != nil {
		s.cfg.Limiter.OnRateLimited(ue.RetryAfter)
	}
}
