package payrecon

import (
	"fmt"
	"math"
	"time"
)

// PlanInput is the cycle-time arithmetic's input: N rows, growing by G new
// rows per hour, swept by B rows per run R times an hour (the seed's
// hourly batch) or continuously at a measured or budgeted throughput.
type PlanInput struct {
	// Rows is N, the rows to cover.
	Rows int64 `json:"rows"`
	// GrowthPerHour is G, new rows per hour.
	GrowthPerHour float64 `json:"growth_per_hour"`
	// Batch and RunsPerHour describe a periodic sweep (B and R).
	Batch       int64   `json:"batch,omitempty"`
	RunsPerHour float64 `json:"runs_per_hour,omitempty"`
	// RowsPerSecond describes a continuous sweep instead: its throughput.
	RowsPerSecond float64 `json:"rows_per_second,omitempty"`
}

// PlanResult is what the arithmetic says.
type PlanResult struct {
	PlanInput
	// CapacityPerHour is B × R (or throughput × 3600): rows checked an hour.
	CapacityPerHour float64 `json:"capacity_per_hour"`
	// MarginPerHour is capacity minus growth; a cycle completes only when
	// it is positive.
	MarginPerHour float64 `json:"margin_per_hour"`
	// Completes is false when B × R ≤ G: the sweep never catches up.
	Completes bool `json:"completes"`
	// CycleTime is N / (B × R − G) when the table keeps growing, N / (B × R)
	// when it does not; zero when the cycle never completes.
	CycleTime time.Duration `json:"cycle_time_ns"`
	// Verdict says the result in words.
	Verdict string `json:"verdict"`
}

// Plan computes the cycle time. A table that grows while it is swept needs
// N / (B × R − G) hours, since the cursor chases rows added behind it;
// with G = 0 that is the seed's N / (B × R).
func Plan(in PlanInput) PlanResult {
	r := PlanResult{PlanInput: in}
	if in.RowsPerSecond > 0 {
		r.CapacityPerHour = in.RowsPerSecond * 3600
	} else {
		r.CapacityPerHour = float64(in.Batch) * in.RunsPerHour
	}
	r.MarginPerHour = r.CapacityPerHour - in.GrowthPerHour
	switch {
	case r.CapacityPerHour <= 0:
		r.Verdict = "no sweep capacity: nothing is ever checked"
	case r.MarginPerHour <= 0:
		r.Verdict = fmt.Sprintf("a cycle never completes: the sweep checks %s rows an hour but %s new rows arrive (B × R ≤ G)",
			human(r.CapacityPerHour), human(in.GrowthPerHour))
	default:
		r.Completes = true
		hours := float64(in.Rows) / r.MarginPerHour
		if hours*3600e9 > math.MaxInt64 {
			hours = math.MaxInt64 / 3600e9
		}
		r.CycleTime = time.Duration(hours * float64(time.Hour))
		r.Verdict = fmt.Sprintf("a full cycle takes about %s (%s rows at %s rows/h, %s new rows/h)",
			FormatDuration(r.CycleTime), human(float64(in.Rows)), human(r.CapacityPerHour), human(in.GrowthPerHour))
	}
	return r
}

// FormatDuration renders a duration for people: "4.6 days", "52 min",
// "3.2 s".
func FormatDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= 2*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	case d >= 2*time.Minute:
		return fmt.Sprintf("%.0f min", d.Minutes())
	case d >= time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Millisecond).String()
}

func human(f float64) string {
	switch {
	case f >= 1e9:
		return fmt.Sprintf("%.1fG", f/1e9)
	case f >= 1e6:
		return fmt.Sprintf("%.1fM", f/1e6)
	case f >= 1e4:
		return fmt.Sprintf("%.1fk", f/1e3)
	}
	return fmt.Sprintf("%.0f", f)
}
