package payrecon_test

import (
	"math"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

func TestAllocate(t *testing.T) {
	t.Parallel()
	if got := payrecon.ReadAllocation(3); got != payrecon.ReadAllocationMin {
		t.Errorf("3 transactions: %d, want the floor", got)
	}
	if got := payrecon.ReadAllocation(1000); got != 500000 {
		t.Errorf("1000 transactions: %d", got)
	}
	// A quiet account (10 transactions a month) with 1 M old rows, swept in
	// retrieve mode hourly: 720 M reads against 10,000; half of that share
	// stretches the cycle to 1 M / 5,000 × 30 days = 6,000 days.
	r := payrecon.Allocate(payrecon.AllocationInput{Rows: 1_000_000, Transactions: 10, ReadsPerRow: 1, Cycle: time.Hour, Share: 0.5})
	if !r.Stretched || r.MinCycle != 6000*24*time.Hour || math.Abs(r.ProjectedReads-5000) > 1 {
		t.Errorf("quiet retrieve: %+v", r)
	}
	// The same in list mode: 10,100 reads a cycle, stretched to 60.6 days.
	r = payrecon.Allocate(payrecon.AllocationInput{Rows: 1_000_000, Transactions: 10, ReadsPerRow: payrecon.ReadsPerRowList, Cycle: time.Hour, Share: 0.5})
	if !r.Stretched || r.MinCycle.Round(time.Hour) != 1454*time.Hour {
		t.Errorf("quiet list: %+v (min cycle %s)", r, r.MinCycle)
	}
	// A busy account is well within: not stretched.
	r = payrecon.Allocate(payrecon.AllocationInput{Rows: 100_000, Transactions: 100_000, ReadsPerRow: payrecon.ReadsPerRowList, Cycle: time.Hour, Share: 0.5})
	if r.Stretched || r.ProjectedReads != 100_000*payrecon.ReadsPerRowList*720 {
		t.Errorf("busy: %+v", r)
	}
}
