package sweep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/payrecon/payrecon"
)

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
