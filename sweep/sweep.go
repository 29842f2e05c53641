// Package sweep is the scanner: it walks every payments row with a keyset
// cursor, reads each row's PaymentIntent from Stripe outside any
// transaction, classifies the pair with payrecon.Classify, and commits the
// results, findings, repair commands and the cursor advance in one
// transaction (RunBatch). RunCycle drives batches until the cursor wraps.
//
// Guarantees, from the seed and its corrections:
//   - every row is checked once per cycle (keyset cursor, wrap with CAS);
//   - no transaction or lock is held while Stripe is called;
//   - a batch whose cursor moved under it is discarded whole (ErrConcurrentRun);
//   - rows inside the grace window are in_flight, not judged;
//   - a row that names no PaymentIntent gets an invalid_local_row finding
//     (needs_review) without a call, and the sweep goes on past it;
//   - last_reconciled_at advances only for rows Stripe was actually read for;
//   - Stripe calls run concurrently up to Config.Concurrency, within one
//     shared rate budget that backs off on 429;
//   - a configuration error (401, 403, other 4xx) stops the sweep at once
//     with nothing written; a systemic outage pauses it without advancing
//     past the failing rows; rows left unverifiable are rechecked early.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/budget"
)

// DefaultJob is the seed's job name.
const DefaultJob = "payments-vs-stripe"

// Config tunes a sweeper and gives it its dependencies. Zero fields take
// the defaults of DefaultConfig; where a zero has no sensible meaning of its
// own but "off" does (Grace, MinCycle, RecheckWait), a negative value turns
// the feature off.
type Config struct {
	// Job names the cursor (and the lease).
	Job string
	// Batch is the number of cursor rows per batch.
	Batch int
	// Grace: rows updated more recently than this are in_flight. Zero takes
	// the default; a negative value turns the window off.
	Grace time.Duration
	// Concurrency bounds the Stripe calls in flight.
	Concurrency int
	// Mode chooses retrieve, list or auto (the default).
	Mode Mode
	// ListSkew widens a batch's creation-time window in list mode, for
	// clock skew between the local created_at and Stripe's created.
	ListSkew time.Duration
	// RecheckBatch bounds the due rechecks added to each batch.
	RecheckBatch int
	// RecheckBackoff is the first delay before an unverifiable row is
	// rechecked; it doubles with each attempt up to RecheckBackoffMax.
	RecheckBackoff    time.Duration
	RecheckBackoffMax time.Duration
	// SystemicFailureRatio: when more than this share of a batch's Stripe
	// calls fail (and at least SystemicMinCalls were made, or the whole batch
	// when smaller), the batch is discarded and the sweep pauses.
	SystemicFailureRatio float64
	SystemicMinCalls     int
	// OutagePause is the first pause after a systemic failure; it doubles up
	// to OutagePauseMax. RunCycle gives up after MaxOutage of consecutive
	// failure.
	OutagePause    time.Duration
	OutagePauseMax time.Duration
	MaxOutage      time.Duration
	// RecheckWait: after the wrap, RunCycle keeps rechecking unverifiable
	// rows as they come due for at most this long (negative: not at all).
	RecheckWait time.Duration
	// MinCycle: the continuous sweep (Run) starts a new cycle no sooner than
	// this after the last one started; it sleeps only when a cycle completes
	// early, rechecking due rows meanwhile (negative: no minimum).
	MinCycle time.Duration
	// StopGrace: when the context of Run or RunCycle ends, the batch in
	// progress gets this long to finish and commit before it is abandoned
	// (and then discarded whole, never half-written).
	StopGrace time.Duration
	// RetryPause is Run's first pause after a failure it retries (the
	// database unavailable, the lease unobtainable); it doubles up to
	// RetryPauseMax.
	RetryPause    time.Duration
	RetryPauseMax time.Duration
	// WaitForLease makes RunCycle wait for another holder of the job's lease
	// instead of failing with payrecon.ErrLeaseHeld.
	WaitForLease bool

	// Limiter is the shared Stripe rate budget; nil means unlimited.
	Limiter *budget.Limiter
	// Clock gives every time the sweep writes and measures; nil means
	// payrecon.SystemClock.
	Clock payrecon.Clock
	// Logger receives progress and warnings; nil discards them.
	Logger *slog.Logger
	// LeaseFunc, when set, makes RunCycle and Run hold the job's lease.
	LeaseFunc payrecon.LeaseFunc
	// SleepFunc waits (outage pauses, recheck waits, idle time between
	// cycles); nil means payrecon.Sleep. Tests advance a fake clock in it.
	SleepFunc func(ctx context.Context, d time.Duration) error
	// Registerer receives the sweep's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Money says which money checks run beside the status verdict: the
	// local columns payments has (postgres.Store.UseMoneyColumns) and the
	// kinds an operator ignores. The zero value judges the charge (refunds,
	// disputes) but no local amount or currency.
	Money payrecon.MoneyChecks
	// IntentMetadata, when set, makes only listed PaymentIntents carrying
	// every one of these metadata pairs count as payrecon's: others are
	// never missing_locally (--intent-metadata).
	IntentMetadata map[string]string
	// StuckAfter: a row observed continuously in one in-flight status
	// longer than its limit gets a stuck_in_flight finding (--stuck-after);
	// nil or empty: off.
	StuckAfter payrecon.StuckAfter
	// VerifiedRefresh: a verified row whose Stripe status did not change
	// gets its observed_external_status and last_reconciled_at written at
	// most once per VerifiedRefresh, spread over the cycles; its
	// verification is recorded per batch in payrecon's own table
	// (payrecon.BatchCommit.VerifiedRefresh, --verified-refresh). Zero takes
	// the default (24h); a negative value writes every verified row.
	VerifiedRefresh time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Job:                  DefaultJob,
		Batch:                200,
		Grace:                10 * time.Minute,
		Concurrency:          8,
		Mode:                 ModeAuto,
		ListSkew:             time.Minute,
		RecheckBackoff:       2 * time.Second,
		RecheckBackoffMax:    5 * time.Minute,
		SystemicFailureRatio: 0.5,
		SystemicMinCalls:     10,
		OutagePause:          time.Second,
		OutagePauseMax:       time.Minute,
		MaxOutage:            5 * time.Minute,
		RecheckWait:          time.Minute,
		MinCycle:             time.Minute,
		StopGrace:            20 * time.Second,
		RetryPause:           time.Second,
		RetryPauseMax:        30 * time.Second,
		VerifiedRefresh:      DefaultVerifiedRefresh,
	}
}

// DefaultVerifiedRefresh is --verified-refresh's default.
const DefaultVerifiedRefresh = 24 * time.Hour

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Job == "" {
		c.Job = d.Job
	}
	if c.Batch <= 0 {
		c.Batch = d.Batch
	}
	if c.Grace == 0 {
		c.Grace = d.Grace
	}
	if c.Concurrency <= 0 {
		c.Concurrency = d.Concurrency
	}
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.ListSkew <= 0 {
		c.ListSkew = d.ListSkew
	}
	if c.RecheckBatch <= 0 {
		c.RecheckBatch = max(1, c.Batch/4)
	}
	if c.RecheckBackoff <= 0 {
		c.RecheckBackoff = d.RecheckBackoff
	}
	if c.RecheckBackoffMax <= 0 {
		c.RecheckBackoffMax = d.RecheckBackoffMax
	}
	if c.SystemicFailureRatio <= 0 {
		c.SystemicFailureRatio = d.SystemicFailureRatio
	}
	if c.SystemicMinCalls <= 0 {
		c.SystemicMinCalls = d.SystemicMinCalls
	}
	if c.OutagePause <= 0 {
		c.OutagePause = d.OutagePause
	}
	if c.OutagePauseMax <= 0 {
		c.OutagePauseMax = d.OutagePauseMax
	}
	if c.MaxOutage <= 0 {
		c.MaxOutage = d.MaxOutage
	}
	if c.StopGrace <= 0 {
		c.StopGrace = d.StopGrace
	}
	if c.RetryPause <= 0 {
		c.RetryPause = d.RetryPause
	}
	if c.RetryPauseMax <= 0 {
		c.RetryPauseMax = d.RetryPauseMax
	}
	c.RetryPauseMax = max(c.RetryPauseMax, c.RetryPause)
	if c.MinCycle == 0 {
		c.MinCycle = d.MinCycle
	}
	c.MinCycle = max(c.MinCycle, 0)
	if c.RecheckWait == 0 {
		c.RecheckWait = d.RecheckWait
	}
	if c.VerifiedRefresh == 0 {
		c.VerifiedRefresh = d.VerifiedRefresh
	}
	c.VerifiedRefresh = max(c.VerifiedRefresh, 0)
	c.RecheckWait = max(c.RecheckWait, 0)
	if c.Clock == nil {
		c.Clock = payrecon.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.SleepFunc == nil {
		c.SleepFunc = payrecon.Sleep
	}
	return c
}

// Validate reports configuration a person must fix.
func (c Config) Validate() error {
	switch {
	case c.Batch < 0:
		return fmt.Errorf("batch must be positive, got %d", c.Batch)
	case c.Batch > 10000:
		return fmt.Errorf("batch %d is too large (at most 10000): a batch is one transaction", c.Batch)
	case c.Mode != "" && c.Mode != ModeRetrieve && c.Mode != ModeList && c.Mode != ModeAuto:
		return fmt.Errorf("mode %q: want retrieve, list or auto", c.Mode)
	case c.Concurrency < 0:
		return fmt.Errorf("concurrency must be positive, got %d", c.Concurrency)
	}
	return nil
}

// Sweeper runs batches and cycles of one job.
type Sweeper struct {
	store   payrecon.SweepStore
	gateway payrecon.Gateway
	cfg     Config
	metrics *metrics

	lister lister
	// sessions is the gateway's SessionGateway (nil when it has none), and
	// sessionLister list mode's listed sessions (session rows).
	sessions      payrecon.SessionGateway
	sessionLister lister
	// sawSessions is set once a batch held a session row; from then on
	// list mode's orphans wait for the rows created before them
	// (deferOrphans), kept in pending meanwhile.
	sawSessions atomic.Bool
	pendingMu   sync.Mutex
	pending     []payrecon.Orphan
	// slots holds one token per Stripe request in flight (Config.Concurrency).
	slots chan struct{}
	// fence is the epoch of the lease held now (0: none).
	fence atomic.Int64
	// batch, when positive, replaces Config.Batch (SetBatch).
	batch atomic.Int64
}

// SetBatch changes the number of cursor rows of the next batches (n ≤ 0:
// Config.Batch again): a platform's account sweep sizes its batches to
// what the account's budget allows in a few seconds.
func (s *Sweeper) SetBatch(n int) { s.batch.Store(int64(n)) }

// New returns a sweeper. cfg's zero fields take the defaults; its metrics
// are registered with cfg.Registerer (so one Registerer takes one sweeper
// per job: the metrics carry the job as a label).
func New(store payrecon.SweepStore, gateway payrecon.Gateway, cfg Config) *Sweeper {
	cfg = cfg.withDefaults()
	s := &Sweeper{store: store, gateway: gateway, cfg: cfg, metrics: newMetrics(cfg.Registerer),
		slots: make(chan struct{}, cfg.Concurrency)}
	s.sessions, _ = gateway.(payrecon.SessionGateway)
	s.sessionLister.sessions = true
	return s
}

// Config returns the effective configuration.
func (s *Sweeper) Config() Config { return s.cfg }

// BatchReport says what one batch did.
type BatchReport struct {
	// Scanned counts cursor rows; Rechecked counts rows from the recheck
	// queue.
	Scanned   int `json:"scanned"`
	Rechecked int `json:"rechecked"`
	// Counts is the number of rows per verdict (rows that changed during the
	// check count as in_flight).
	Counts      map[payrecon.Verdict]int `json:"counts"`
	Verified    int                      `json:"verified"`
	NewFindings int                      `json:"new_findings"`
	Resolved    int                      `json:"resolved"`
	// Opened and Closed break NewFindings and Resolved down by kind.
	Opened   map[payrecon.Kind]int `json:"opened_by_kind,omitempty"`
	Closed   map[payrecon.Kind]int `json:"resolved_by_kind,omitempty"`
	Commands int                   `json:"commands"`
	// StripeCalls counts requests made to Stripe.
	StripeCalls int `json:"stripe_calls"`
	// Cursor is the position after the batch.
	Cursor  int64 `json:"cursor"`
	Wrapped bool  `json:"wrapped"`
	// CycleStartedAt is when the cycle the batch belongs to began (for a
	// wrap: the cycle it completed).
	CycleStartedAt time.Time `json:"cycle_started_at,omitzero"`
}

func (r *BatchReport) setResult(res payrecon.CommitResult) {
	r.Verified, r.Commands = res.Verified, len(res.Commands)
	r.Opened, r.Closed = res.Opened, res.Resolved
	r.NewFindings, r.Resolved = 0, 0
	for _, n := range res.Opened {
		r.NewFindings += n
	}
	for _, n := range res.Resolved {
		r.Resolved += n
	}
}

// SystemicFailureError says a batch was discarded because most of its Stripe
// calls failed; it matches payrecon.ErrUnavailable.
type SystemicFailureError struct {
	Failed, Calls int
	Last          error
}

func (e *SystemicFailureError) Error() string {
	return fmt.Sprintf("stripe outage: %d of %d calls in the batch failed (last: %v); batch discarded, cursor not advanced",
		e.Failed, e.Calls, e.Last)
}

// Is makes errors.Is(err, payrecon.ErrUnavailable) true.
func (e *SystemicFailureError) Is(target error) bool { return target == payrecon.ErrUnavailable }

// Unwrap returns the last call's error.
func (e *SystemicFailureError) Unwrap() error { return e.Last }

// RunBatch checks the next batch of the job: cursor rows plus due rechecks.
// When the cursor is at the end of the table it wraps instead (a completed
// cycle) and returns with Wrapped set.
func (s *Sweeper) RunBatch(ctx context.Context) (BatchReport, error) {
	return s.runBatch(ctx, false)
}

// RunRechecks checks the job's due rechecks only, without moving the
// cursor: what the continuous sweep does between cycles.
func (s *Sweeper) RunRechecks(ctx context.Context) (BatchReport, error) {
	return s.runBatch(ctx, true)
}

// NextRecheck returns when the job's earliest queued recheck is due (zero:
// none).
func (s *Sweeper) NextRecheck(ctx context.Context) (time.Time, error) {
	return s.store.NextRecheck(ctx, s.cfg.Job, "")
}

func (s *Sweeper) runBatch(ctx context.Context, rechecksOnly bool) (BatchReport, error) {
	now := s.cfg.Clock.Now()
	start := now
	rep := BatchReport{Counts: map[payrecon.Verdict]int{}}
	limit := s.cfg.Batch
	if n := s.batch.Load(); n > 0 {
		limit = int(n)
	}
	if rechecksOnly {
		limit = 0
	}
	cur, rows, rechecks, err := s.store.ReadBatch(ctx, s.cfg.Job, limit, s.cfg.RecheckBatch, now)
	if err != nil {
		return rep, err
	}
	rep.Cursor, rep.CycleStartedAt = cur.LastID, cur.CycleStartedAt
	if len(rows) == 0 && !rechecksOnly {
		if pending := s.takePending(); len(pending) > 0 {
			// The orphans the last batches held back: the table ends here.
			res, err := s.store.CommitBatch(ctx, payrecon.BatchCommit{Job: s.cfg.Job, From: cur.LastID, Orphans: pending,
				Now: s.cfg.Clock.Now(), Fence: s.fence.Load(), StuckAfter: s.cfg.StuckAfter})
			if err != nil {
				return rep, err
			}
			rep.setResult(res)
		}
		if err := s.store.Wrap(ctx, s.cfg.Job, cur.LastID, s.fence.Load(), now); err != nil {
			return rep, err
		}
		rep.Wrapped, rep.Cursor = true, 0
		return rep, nil
	}
	seen := make(map[int64]bool, len(rows))
	for _, r := range rows {
		seen[r.ID] = true
	}
	all := rows
	for _, r := range rechecks {
		if !seen[r.ID] {
			all = append(all, r)
		}
	}
	rep.Scanned, rep.Rechecked = len(rows), len(all)-len(rows)
	if len(all) == 0 {
		return rep, nil
	}

	checks, orphans, calls, err := s.check(ctx, all, now, cur.ReadAt, len(rows) == limit)
	rep.StripeCalls = calls
	if err != nil {
		return rep, err
	}
	if err := s.systemic(checks); err != nil {
		return rep, err
	}

	commit := payrecon.BatchCommit{
		Job:        s.cfg.Job,
		From:       cur.LastID,
		Advance:    len(rows) > 0,
		Checks:     checks,
		Orphans:    orphans,
		Grace:      max(s.cfg.Grace, 0),
		Now:        s.cfg.Clock.Now(),
		Busy:       s.cfg.Clock.Now().Sub(start),
		StuckAfter: s.cfg.StuckAfter,
		Fence:      s.fence.Load(),

		VerifiedRefresh: s.cfg.VerifiedRefresh,
	}
	if len(rows) > 0 {
		commit.To = rows[len(rows)-1].ID
	}
	res, err := s.store.CommitBatch(ctx, commit)
	if err != nil {
		return rep, err
	}
	stale := make(map[int64]bool, len(res.Stale))
	for _, id := range res.Stale {
		stale[id] = true
	}
	for _, c := range checks {
		v := c.Decision.Verdict
		if stale[c.Row.ID] {
			v = payrecon.InFlight
		}
		rep.Counts[v]++
	}
	rep.setResult(res)
	if commit.Advance {
		rep.Cursor = commit.To
	}
	s.metrics.batchDone(s.cfg.Job, rep, s.cfg.Clock.Now().Sub(start))
	return rep, nil
}

// systemic reports an outage: most of the Stripe calls for the batch's
// cursor rows failed. Rows from the recheck queue do not count: they failed
// before, so their failing again says nothing about Stripe as a whole.
func (s *Sweeper) systemic(checks []payrecon.Check) error {
	calls, failed := 0, 0
	var last error
	for _, c := range checks {
		if c.Row.FromRecheck {
			continue
		}
		switch {
		case c.Decision.Verdict == payrecon.Unverifiable:
			calls++
			failed++
			last = errors.New(c.Err)
		case c.Read():
			calls++
		}
	}
	if failed == 0 || calls < min(s.cfg.SystemicMinCalls, s.cfg.Batch) {
		return nil
	}
	if float64(failed)/float64(calls) > s.cfg.SystemicFailureRatio {
		return &SystemicFailureError{Failed: failed, Calls: calls, Last: last}
	}
	return nil
}

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

// runBatchGracefully runs one batch that survives the end of ctx for up to
// Config.StopGrace, so that a shutdown lets the batch in progress commit.
func (s *Sweeper) runBatchGracefully(ctx context.Context, rechecksOnly bool) (BatchReport, error) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(s.cfg.StopGrace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-bctx.Done():
		}
	})
	defer stop()
	return s.runBatch(bctx, rechecksOnly)
}

// Recheck checks the given rows against Stripe now, ignoring the grace
// window, and commits the results the way a batch does (findings opened,
// healed or superseded, repair commands queued) without moving the cursor.
// It is `payrecon findings recheck`.
func (s *Sweeper) Recheck(ctx context.Context, rows []payrecon.PaymentRow) (BatchReport, []payrecon.Check, error) {
	rep := BatchReport{Counts: map[payrecon.Verdict]int{}, Rechecked: len(rows)}
	now := s.cfg.Clock.Now()
	readAt, err := s.store.DatabaseNow(ctx)
	if err != nil {
		return rep, nil, err
	}
	checks := make([]payrecon.Check, len(rows))
	var retrieve []*payrecon.Check
	for i := range rows {
		checks[i].Row = rows[i]
		if rows[i].IntentID == "" && rows[i].SessionID == "" {
			checks[i].Decision = payrecon.InvalidLocalRow()
			continue
		}
		retrieve = append(retrieve, &checks[i])
	}
	if err := s.retrieveAll(ctx, retrieve, now, readAt); err != nil {
		return rep, nil, err
	}
	for i := range checks {
		s.dropIgnored(&checks[i])
	}
	rep.StripeCalls = len(rows)
	res, err := s.store.CommitBatch(ctx, payrecon.BatchCommit{Job: s.cfg.Job, Checks: checks, Grace: max(s.cfg.Grace, 0), Now: s.cfg.Clock.Now(), StuckAfter: s.cfg.StuckAfter})
	if err != nil {
		return rep, nil, err
	}
	stale := map[int64]bool{}
	for _, id := range res.Stale {
		stale[id] = true
	}
	for i, c := range checks {
		if stale[c.Row.ID] {
			checks[i].Decision = payrecon.Decision{Verdict: payrecon.InFlight, Reason: "the row changed while it was checked; try again"}
		}
		rep.Counts[checks[i].Decision.Verdict]++
	}
	rep.setResult(res)
	return rep, checks, nil
}
