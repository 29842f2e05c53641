package payrecon

import (
	"math"
	"testing"
	"time"
)

func TestProjectReads(t *testing.T) {
	t.Parallel()
	const window = 30 * 24 * 3600.0
	for _, c := range []struct {
		name      string
		in        ReadPlanInput
		sweep     float64
		allowance float64
	}{
		// 1 M rows, retrieve at 20/s: a cycle is 50,000 s, so the sweep runs
		// all the time: 20 × 30 days.
		{"budget-bound", ReadPlanInput{Rows: 1_000_000, Transactions: 100_000, ReadsPerRow: 1, RPS: 20, MinCycle: time.Minute}, 20 * window, 50_000_000},
		// 1,000 rows at 20/s take 50 s, but cycles start an hour apart.
		{"min-cycle-bound", ReadPlanInput{Rows: 1000, Transactions: 10, ReadsPerRow: 1, RPS: 20, MinCycle: time.Hour}, 1000 * 720, ReadsMinimum},
		// List mode: 100 rows a request.
		{"list", ReadPlanInput{Rows: 1_000_000, Transactions: 100_000, ReadsPerRow: 0.01, RPS: 20, MinCycle: time.Hour}, 10_000 * 720, 50_000_000},
		{"empty", ReadPlanInput{RPS: 20, MinCycle: time.Hour}, 0, ReadsMinimum},
	} {
		p := ProjectReads(c.in)
		if math.Abs(p.Sweep-c.sweep) > 1e-6*c.sweep || p.Allowance != c.allowance {
			t.Errorf("%s: sweep %.0f, allowance %.0f; want %.0f, %.0f", c.name, p.Sweep, p.Allowance, c.sweep, c.allowance)
		}
	}
	p := ProjectReads(ReadPlanInput{Rows: 10, ReadsPerRow: 1, RPS: 20, MinCycle: time.Hour, EventsInterval: 30 * time.Second,
		RecentRows: 50, RecentInterval: 5 * time.Minute})
	if p.Events != window/30 || p.Recent != window/300 || p.Total != p.Sweep+p.Events+p.Recent || p.Share != p.Total/ReadsMinimum {
		t.Errorf("companions: %+v", p)
	}
	if inf := ProjectReads(ReadPlanInput{Rows: 10, ReadsPerRow: 1}); !math.IsInf(inf.Sweep, 1) {
		t.Errorf("no budget and no minimum cycle: sweep %v, want unbounded", inf.Sweep)
	}
}
