package payrecon

import (
	"fmt"
	"math"
	"time"
)

// Stripe's read allocation: read requests are budgeted at ReadsPerTransaction
// per transaction over a rolling ReadWindow, with at least ReadsMinimum.
const (
	ReadsPerTransaction = 500
	ReadsMinimum        = 10_000
	ReadWindow          = 30 * 24 * time.Hour
)

// Reads per row checked: one retrieve per row, or a list page of up to 100
// intents (measured: about 0.01 requests per row in list mode).
const (
	ReadsPerRowRetrieve = 1.0
	ReadsPerRowList     = 0.01
)

// ReadPlanInput is what the read-allocation projection needs: the
// configuration of the sweep and its companions, and the table's figures.
type ReadPlanInput struct {
	// Rows is N; Transactions the payments created in the last ReadWindow
	// (Stripe counts transactions: the estimate is one per payment).
	Rows, Transactions int64
	// ReadsPerRow is ReadsPerRowRetrieve or ReadsPerRowList.
	ReadsPerRow float64
	// RPS is the sweep's request budget per second (0: unlimited);
	// MinCycle the least time between two cycles' starts.
	RPS      float64
	MinCycle time.Duration
	// EventsInterval is the catch-up's interval (0: off): one request a
	// round when nothing happens.
	EventsInterval time.Duration
	// RecentRows and RecentInterval are the recent window's rows and its
	// interval (0: off), read in list mode.
	RecentRows     int64
	RecentInterval time.Duration
}

// ReadPlan is the projection: reads per ReadWindow against the allocation.
type ReadPlan struct {
	ReadPlanInput
	// Sweep, Events and Recent are each road's reads per ReadWindow; Total
	// their sum.
	Sweep, Events, Recent, Total float64
	// Allowance is the allocation: ReadsPerTransaction × Transactions, at
	// least ReadsMinimum.
	Allowance float64
	// Share is Total / Allowance.
	Share float64
}

// ProjectReads projects the reads a configuration makes per ReadWindow. A
// full cycle reads Rows × ReadsPerRow; it takes that many reads at RPS, but
// starts no sooner than MinCycle after the last, so a budget larger than
// the table needs spends only what the cycles need.
func ProjectReads(in ReadPlanInput) ReadPlan {
	p := ReadPlan{ReadPlanInput: in}
	window := ReadWindow.Seconds()
	cycleReads := float64(in.Rows) * in.ReadsPerRow
	cycle := in.MinCycle.Seconds()
	if in.RPS > 0 {
		cycle = math.Max(cycle, cycleReads/in.RPS)
	}
	switch {
	case cycleReads == 0:
	case cycle <= 0: // unlimited and no minimum: bounded only by latency
		p.Sweep = math.Inf(1)
	default:
		p.Sweep = cycleReads * window / cycle
	}
	if in.EventsInterval > 0 {
		p.Events = window / in.EventsInterval.Seconds()
	}
	if in.RecentInterval > 0 {
		p.Recent = math.Max(1, float64(in.RecentRows)*ReadsPerRowList) * window / in.RecentInterval.Seconds()
	}
	p.Total = p.Sweep + p.Events + p.Recent
	p.Allowance = math.Max(ReadsMinimum, float64(in.Transactions)*ReadsPerTransaction)
	p.Share = p.Total / p.Allowance
	return p
}

// String says the projection in words.
func (p ReadPlan) String() string {
	if math.IsInf(p.Total, 1) {
		return "unbounded reads: no request budget (--rps 0) and no minimum cycle: the sweep reads as fast as Stripe answers"
	}
	return fmt.Sprintf("%s reads per 30 days (sweep %s, events %s, recent window %s) against an allocation of %s (%s transactions in 30 days × %d, at least %s): %.0f %%",
		human(p.Total), human(p.Sweep), human(p.Events), human(p.Recent), human(p.Allowance), human(float64(p.Transactions)),
		ReadsPerTransaction, human(ReadsMinimum), 100*p.Share)
}
