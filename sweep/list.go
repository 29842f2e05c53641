package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// ReadsPerRow is what the mode costs in Stripe read requests per row, for
// the read allocation's arithmetic (payrecon.Allocate): 1 in retrieve mode,
// payrecon.ReadsPerRowList when it lists (list and auto mode).
func (m Mode) ReadsPerRow() float64 {
	if m == ModeRetrieve {
		return 1
	}
	return payrecon.ReadsPerRowList
}

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

// spanIntents is how many intents list mode aims to put in one listed span:
// a page's worth, with room for intents other systems create in the account.
const spanIntents = 98

// Listing. List mode reads PaymentIntents by creation time, in spans: a
// stretch of Stripe's created filter (whole seconds) listed page after page
// (cursor pagination is sequential). A batch's window is cut into spans of
// about a page each, listed at once, so that a batch waits for one
// request's latency rather than one per page; and while RunCycle or Run
// drives the sweeper, the windows of the next batches are listed ahead in
// the background while this one retrieves and commits (lookahead), so that
// list requests stay in flight up to Config.Concurrency and the rate budget,
// not Stripe's latency, bounds the sweep. Every listed span is kept for the
// batches whose windows it covers, for at most maxAge (below the grace
// window: a local change made after a listing is still inside the grace
// window when the listing is used, and not judged against it). Listing is an
// optimisation: a row whose intent was not seen is retrieved by id.

// listSpan is one stretch of the created filter, listed or being listed.
type listSpan struct {
	lo, hi time.Time // whole seconds, inclusive
	// listedAt is the sweeper's clock before the span's first request: its
	// answers' age.
	listedAt   time.Time
	background bool
	// ofSessions: the span lists Checkout Sessions, not PaymentIntents.
	ofSessions bool
	done       chan struct{}
	// Set before done is closed (sessions instead of intents in the
	// session lister's spans):
	intents  []payrecon.Intent
	sessions []payrecon.Session
	complete bool // every page was read (not stopped at its page cap)
	err      error
	calls    int
	counted  bool // its calls were reported by a batch (guarded by lister.mu)
}

// lister holds a sweeper's listed spans, disjoint and sorted by lo. A
// sweeper has two: one of PaymentIntents, and one of Checkout Sessions
// (sessions true) for the rows that record a session only; both work alike.
type lister struct {
	sessions bool
	mu       sync.Mutex
	spans    []*listSpan
	// While RunCycle or Run drives the sweeper, bg is their context and
	// lookahead listings run in it, tracked by wg.
	bg context.Context
	wg sync.WaitGroup
	// ahead is the stretch the last lookahead covered, and skip how many
	// batches to go without one after a batch whose window fell outside it
	// (rows not in creation order: listing ahead would be wasted).
	aheadLo, aheadHi time.Time
	skip             int
	// uncounted sums the calls of spans no batch reported (lookahead past
	// the end of the table, or evicted unused): RunCycle adds them.
	uncounted int
}

// startLookahead lets list mode list ahead of the batches until stop is
// called; stop cancels what is still in flight and waits for it.
func (s *Sweeper) startLookahead(ctx context.Context) (stop func()) {
	stopIntents, stopSessions := s.startListerLookahead(ctx, &s.lister), s.startListerLookahead(ctx, &s.sessionLister)
	return func() {
		stopIntents()
		stopSessions()
	}
}

// takeUncounted returns, and forgets, the calls no batch reported, of both
// listers.
func (s *Sweeper) takeUncounted() int {
	return s.lister.takeUncounted() + s.sessionLister.takeUncounted()
}

func (s *Sweeper) startListerLookahead(ctx context.Context, l *lister) (stop func()) {
	bg, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	l.bg = bg
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.bg = nil
		l.mu.Unlock()
		cancel()
		l.wg.Wait()
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, sp := range l.spans {
			l.count(sp)
		}
		l.spans = nil
	}
}

// takeUncounted returns, and forgets, the calls no batch reported.
func (l *lister) takeUncounted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.uncounted
	l.uncounted = 0
	return n
}

// count adds a finished span's calls to uncounted unless a batch reported
// them. Called with mu held.
func (l *lister) count(sp *listSpan) {
	select {
	case <-sp.done:
		if !sp.counted {
			sp.counted = true
			l.uncounted += sp.calls
		}
	default: // still in flight: stop cancels it and counts it after
	}
}

func (s *Sweeper) maxListAge() time.Duration { return min(30*time.Second, max(s.cfg.Grace, 0)) }

// listFor lists the PaymentIntents created in the window of rows[idx] and
// returns them by id, with the intents that may have no local row. It
// returns nil (and no error) when listing is not worth it; the caller
// retrieves whatever is not in the result. Each intent carries the
// database's time taken before the request that listed it (Intent.ReadAt:
// readAt, or for a span listed by an earlier batch that batch's). more says
// the cursor has rows after this batch: the windows after this one are then
// listed ahead.
func (s *Sweeper) listFor(ctx context.Context, rows []payrecon.PaymentRow, idx []int, now, readAt time.Time, more bool) (map[string]payrecon.Intent, []payrecon.Orphan, int, error) {
	lo, hi, step, maxPages, ok, err := s.listPlan(ctx, rows, idx)
	if err != nil || !ok {
		return nil, nil, 0, err
	}
	spans, calls := s.listWindow(ctx, &s.lister, lo, hi, readAt, step, maxPages)
	got := map[string]payrecon.Intent{}
	for _, sp := range spans {
		if sp.err != nil {
			return nil, nil, calls, sp.err
		}
		for _, in := range sp.intents {
			if !in.Created.Before(lo) && !in.Created.After(hi) {
				got[in.ID] = in
			}
		}
	}
	if more {
		s.lookahead(&s.lister, lo, hi, denser(step, lo, hi, len(got)), readAt)
	}

	inBatch := make(map[string]bool, len(rows))
	for _, r := range rows {
		inBatch[r.IntentID] = true
	}
	var orphans []payrecon.Orphan
	settled := now.Add(-max(s.cfg.Grace, 0))
	for _, in := range got {
		// Only what the window asked for (a server that ignores the filter,
		// as stripe-mock does, must not produce orphans: got holds only
		// intents created in the window), and not an intent created
		// moments ago, whose local row may not be written yet.
		if !inBatch[in.ID] && in.Created.Before(settled) && in.Status != "" {
			orphans = append(orphans, payrecon.Orphan{IntentID: in.ID, Status: in.Status, Created: in.Created})
		}
	}
	return got, orphans, calls, nil
}

// denser is the lookahead's step: at the density Stripe showed (seen
// objects in [lo, hi]), if higher than the rows'.
func denser(step time.Duration, lo, hi time.Time, seen int) time.Duration {
	if seen > 0 {
		step = min(step, max(time.Second, (hi.Sub(lo)*spanIntents/time.Duration(seen)).Truncate(time.Second)))
	}
	return step
}

// listPlan is the window of rows[idx] to list ([lo, hi], whole seconds),
// the step of its spans (about a page each) and the page budget; ok false
// when listing is not worth it (auto mode, and the local rows say retrieving
// is cheaper). Both listers plan alike.
func (s *Sweeper) listPlan(ctx context.Context, rows []payrecon.PaymentRow, idx []int) (lo, hi time.Time, step time.Duration, maxPages int, ok bool, err error) {
	created := make([]time.Time, len(idx))
	for k, i := range idx {
		created[k] = rows[i].CreatedAt
	}
	slices.SortFunc(created, func(a, b time.Time) int { return a.Compare(b) })
	first, last := created[0], created[len(created)-1]
	lo = first.Add(-s.cfg.ListSkew).Truncate(time.Second)
	hi = last.Add(s.cfg.ListSkew + time.Second - 1).Truncate(time.Second)

	// The page budget: in auto mode from the local rows in the window (an
	// estimate of Stripe's), and list only if clearly cheaper; in list mode
	// never more requests than retrieving every row would take.
	maxPages = len(idx)
	if s.cfg.Mode == ModeAuto {
		// Counting further than where listing stops paying off is wasted.
		est, err := s.store.CountCreatedBetween(ctx, lo, hi, int64(len(idx))*listPageSize/2)
		if err != nil {
			return lo, hi, 0, 0, false, err
		}
		pages := int(est/listPageSize) + 1
		if 2*pages > len(idx) {
			return lo, hi, 0, 0, false, nil
		}
		maxPages = 2*pages + 2
	}

	// Seconds per span of about a page, at the density of the batch's rows.
	step = hi.Sub(lo) + time.Second
	if len(created) > 1 && last.After(first) {
		step = max(time.Second, (last.Sub(first) * spanIntents / time.Duration(len(created)-1)).Truncate(time.Second))
	}
	return lo, hi, step, maxPages, true, nil
}

// listWindow returns the spans that cover [lo, hi], listing the stretches no
// fresh span covers (cut every step, about a page each, and listed at
// once, each up to its share of
// maxPages) and waiting for those in flight. calls counts the requests of
// the spans it reports for the first time. A span that failed is dropped
// from the lister (a later batch lists it again) and returned with its
// error.
func (s *Sweeper) listWindow(ctx context.Context, l *lister, lo, hi, readAt time.Time, step time.Duration, maxPages int) ([]*listSpan, int) {
	l.mu.Lock()
	s.evictLocked(l, lo)
	gaps := l.gapsLocked(lo, hi)
	var mine []*listSpan
	pieces := 0
	for _, g := range gaps {
		pieces += len(cutByStep(g[0], g[1], step))
	}
	capPages := max(2, maxPages/max(pieces, 1))
	for _, g := range gaps {
		for _, p := range cutByStep(g[0], g[1], step) {
			sp := s.newSpanLocked(l, p[0], p[1], false)
			mine = append(mine, sp)
			go s.listSpan(ctx, sp, readAt, capPages)
		}
	}
	var spans []*listSpan
	for _, sp := range l.spans {
		if !sp.hi.Before(lo) && !sp.lo.After(hi) {
			spans = append(spans, sp)
		}
	}
	l.mu.Unlock()

	for _, sp := range spans {
		select {
		case <-sp.done:
		case <-ctx.Done():
			// Ours stop with ctx; wait for them so that none outlives the batch.
			for _, m := range mine {
				<-m.done
			}
			return []*listSpan{{err: ctx.Err(), done: closed}}, s.reportCalls(l, spans)
		}
	}
	calls := s.reportCalls(l, spans)
	l.mu.Lock()
	for _, sp := range spans {
		if sp.err != nil {
			l.removeLocked(sp)
		}
	}
	l.mu.Unlock()
	return spans, calls
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// reportCalls returns the calls of the finished spans no batch reported yet.
func (s *Sweeper) reportCalls(l *lister, spans []*listSpan) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, sp := range spans {
		select {
		case <-sp.done:
			if !sp.counted {
				sp.counted = true
				n += sp.calls
			}
		default:
		}
	}
	return n
}

// lookahead lists, in the background, the stretch after [lo, hi] that the
// next batches' windows will ask for: Config.Concurrency spans of step
// each (about a page). It does nothing
// unless RunCycle or Run drives the sweeper, when listed answers may not be
// kept (no grace window), and for a few batches after one whose window fell
// outside the last lookahead (rows not in creation order).
func (s *Sweeper) lookahead(l *lister, lo, hi time.Time, step time.Duration, readAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bg == nil || s.maxListAge() <= 0 {
		return
	}
	inOrder := l.aheadHi.IsZero() || (!lo.After(l.aheadHi) && !hi.Before(l.aheadLo))
	switch {
	case l.skip > 0:
		l.skip--
		return
	case !inOrder:
		l.skip, l.aheadLo, l.aheadHi = 8, time.Time{}, time.Time{}
		return
	}
	// Config.Concurrency spans ahead: enough to keep that many requests in
	// flight (each waits for a request slot, then for the rate budget).
	from, until := hi.Add(time.Second), hi.Add(step*time.Duration(s.cfg.Concurrency))
	for _, g := range l.gapsLocked(from, until) {
		for at := g[0]; !at.After(g[1]); {
			end := at.Add(step - time.Second)
			if end.After(g[1]) {
				if g[1].Equal(until) {
					break // a sliver at the front: the next batch lists it with the step after it
				}
				end = g[1] // a hole between listed spans
			}
			sp := s.newSpanLocked(l, at, end, true)
			l.wg.Add(1)
			go func(bg context.Context) {
				defer l.wg.Done()
				s.listSpan(bg, sp, readAt, 3)
			}(l.bg)
			at = end.Add(time.Second)
		}
	}
	l.aheadLo, l.aheadHi = hi, until
}

// listSpan lists sp page after page, each request within the rate budget,
// up to capPages requests (beyond, the span is incomplete: its window holds
// far more than expected, and the rows not seen are retrieved).
func (s *Sweeper) listSpan(ctx context.Context, sp *listSpan, readAt time.Time, capPages int) {
	defer close(sp.done)
	q := payrecon.ListQuery{CreatedGTE: sp.lo, CreatedLTE: sp.hi, Limit: listPageSize}
	for sp.calls < capPages {
		release, err := s.slot(ctx)
		if err != nil {
			sp.err = err
			return
		}
		var (
			n       int
			last    string
			hasMore bool
		)
		if sp.ofSessions {
			var page payrecon.SessionPage
			page, err = s.sessions.ListSessions(ctx, q)
			for _, cs := range page.Sessions {
				cs.ReadAt = readAt
				sp.sessions = append(sp.sessions, cs)
				last = cs.ID
			}
			n, hasMore = len(page.Sessions), page.HasMore
		} else {
			var page payrecon.IntentPage
			page, err = s.gateway.ListIntents(ctx, q)
			for _, in := range page.Intents {
				in.ReadAt = readAt
				sp.intents = append(sp.intents, in)
				last = in.ID
			}
			n, hasMore = len(page.Intents), page.HasMore
		}
		release()
		sp.calls++
		if err != nil {
			s.noteRateLimit(err)
			sp.err = err
			return
		}
		s.limiterSuccess()
		if !hasMore || n == 0 {
			sp.complete = true
			return
		}
		q.StartingAfter = last
	}
}

// newSpanLocked adds a span for [lo, hi] to the lister. Called with mu held.
func (s *Sweeper) newSpanLocked(l *lister, lo, hi time.Time, background bool) *listSpan {
	sp := &listSpan{lo: lo, hi: hi, listedAt: s.cfg.Clock.Now(), background: background, ofSessions: l.sessions, done: make(chan struct{})}
	i, _ := slices.BinarySearchFunc(l.spans, lo, func(x *listSpan, t time.Time) int { return x.lo.Compare(t) })
	l.spans = slices.Insert(l.spans, i, sp)
	return sp
}

func (l *lister) removeLocked(sp *listSpan) {
	if i := slices.Index(l.spans, sp); i >= 0 {
		l.spans = slices.Delete(l.spans, i, i+1)
	}
}

// evictLocked drops the finished spans that are too old to be used, or
// that end before lo (the batches have moved past them). Called with mu
// held.
func (s *Sweeper) evictLocked(l *lister, lo time.Time) {
	maxAge, now := s.maxListAge(), s.cfg.Clock.Now()
	l.spans = slices.DeleteFunc(l.spans, func(sp *listSpan) bool {
		select {
		case <-sp.done:
		default:
			return false // in flight: whoever waits on it decides
		}
		if now.Sub(sp.listedAt) >= maxAge || sp.hi.Before(lo) || !sp.complete {
			l.count(sp)
			return true
		}
		return false
	})
}

// gapsLocked returns the stretches of [lo, hi] no span covers, in order.
// Called with mu held.
func (l *lister) gapsLocked(lo, hi time.Time) [][2]time.Time {
	var gaps [][2]time.Time
	at := lo
	for _, sp := range l.spans {
		if sp.hi.Before(at) {
			continue
		}
		if sp.lo.After(hi) {
			break
		}
		if sp.lo.After(at) {
			gaps = append(gaps, [2]time.Time{at, sp.lo.Add(-time.Second)})
		}
		at = sp.hi.Add(time.Second)
		if at.After(hi) {
			return gaps
		}
	}
	if !at.After(hi) {
		gaps = append(gaps, [2]time.Time{at, hi})
	}
	return gaps
}

// cutByStep cuts [lo, hi] (whole seconds) into pieces of step; a last piece
// shorter than half a step joins the one before (a request for a sliver
// would cost as much as one for a page).
func cutByStep(lo, hi time.Time, step time.Duration) [][2]time.Time {
	var pieces [][2]time.Time
	for at := lo; !at.After(hi); {
		end := at.Add(step - time.Second)
		if end.After(hi) {
			end = hi
		}
		if n := len(pieces); n > 0 && end.Sub(at) < step/2 {
			pieces[n-1][1] = end
		} else {
			pieces = append(pieces, [2]time.Time{at, end})
		}
		at = end.Add(time.Second)
	}
	return pieces
}

// slot waits for one of the Config.Concurrency request slots every Stripe
// request of the sweeper takes (lists and retrieves alike, foreground or
// ahead), then for the rate budget; release gives the slot back.
func (s *Sweeper) slot(ctx context.Context) (release func(), err error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	release = func() { <-s.slots }
	if s.cfg.Limiter != nil {
		if err := s.cfg.Limiter.Wait(ctx); err != nil {
			release()
			return nil, err
		}
	}
	return release, nil
}

func (s *Sweeper) noteRateLimit(err error) {
	var ue *payrecon.UnavailableError
	if errors.As(err, &ue) && ue.RateLimited && s.cfg.Limiter != nil {
		s.cfg.Limiter.OnRateLimited(ue.RetryAfter)
	}
}
