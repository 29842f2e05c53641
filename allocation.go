package payrecon

import (
	"math"
	"time"
)

// Stripe's read allocation: over a rolling 30 days an account may make 500
// read requests per transaction it processed, and at least 10,000; a
// platform reading on behalf of its connected accounts has 500 per
// transaction summed over them. A sweep's reads count against it: a quiet
// account with a large old table can exceed it in one retrieve-mode cycle.
const (
	ReadsPerTransaction = 500
	ReadAllocationMin   = 10000
	AllocationWindow    = 30 * 24 * time.Hour
	// ReadShareDefault is the share of the allocation the sweep plans to
	// use at most (--read-share): cycles are stretched rather than plan
	// more.
	ReadShareDefault = 0.5
	// ReadsPerRowList is what a list-mode sweep costs per row (measured:
	// 0.0101 requests per verified row); retrieve mode costs 1.
	ReadsPerRowList = 0.0101
)

// ReadAllocation is the allocation of an account (or a platform, with its
// accounts' transactions summed) that processed transactions in the last 30
// days.
func ReadAllocation(transactions int64) int64 {
	return max(ReadAllocationMin, ReadsPerTransaction*transactions)
}

// AllocationInput is one account's figures for the read-allocation
// arithmetic.
type AllocationInput struct {
	// Rows is the account's payments rows; Transactions those created in
	// the last 30 days (the estimate of its transactions).
	Rows         int64 `json:"rows"`
	Transactions int64 `json:"transactions_30d"`
	// ReadsPerRow is 1 in retrieve mode, ReadsPerRowList in list mode.
	ReadsPerRow float64 `json:"reads_per_row"`
	// Cycle is the cycle time the sweep would take (its minimum cycle, or
	// the projection, whichever is longer).
	Cycle time.Duration `json:"cycle_ns"`
	// Share is --read-share.
	Share float64 `json:"read_share"`
}

// AllocationResult says what the sweep's reads come to over 30 days.
type AllocationResult struct {
	AllocationInput
	Allocation int64 `json:"allocation"`
	// ProjectedReads are the sweep's reads over 30 days at Cycle.
	ProjectedReads float64 `json:"projected_reads_30d"`
	// MinCycle is the shortest cycle that keeps the reads within Share of
	// the allocation; Stretched is true when it is longer than Cycle (the
	// sweep then waits that long between cycles).
	MinCycle  time.Duration `json:"min_cycle_ns"`
	Stretched bool          `json:"stretched"`
}

// Allocate computes an account's projected reads against its allocation,
// and the cycle --read-share asks for.
func Allocate(in AllocationInput) AllocationResult {
	r := AllocationResult{AllocationInput: in, Allocation: ReadAllocation(in.Transactions)}
	perCycle := float64(in.Rows) * in.ReadsPerRow
	if in.Cycle > 0 {
		r.ProjectedReads = perCycle * float64(AllocationWindow) / float64(in.Cycle)
	} else {
		r.ProjectedReads = math.Inf(1)
	}
	if in.Share > 0 && perCycle > 0 {
		r.MinCycle = time.Duration(math.Ceil(perCycle / (in.Share * float64(r.Allocation)) * float64(AllocationWindow)))
		r.Stretched = r.MinCycle > in.Cycle
	}
	if r.Stretched && r.MinCycle > 0 {
		r.ProjectedReads = perCycle * float64(AllocationWindow) / float64(r.MinCycle)
	}
	return r
}
