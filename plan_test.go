package payrecon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/payrecon/payrecon"
)

func TestPlan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		in        payrecon.PlanInput
		completes bool
		cycle     time.Duration
		words     string
	}{
		// The seed: N ÷ (B × R).
		{"seed hourly, no growth", payrecon.PlanInput{Rows: 10000, Batch: 200, RunsPerHour: 1}, true, 50 * time.Hour, "2.1 days"},
		// B × R ≤ G: never.
		{"growth outruns the sweep", payrecon.PlanInput{Rows: 10000, Batch: 200, RunsPerHour: 1, GrowthPerHour: 200}, false, 0, "never completes"},
		{"growth eats part of the capacity", payrecon.PlanInput{Rows: 10000, Batch: 200, RunsPerHour: 1, GrowthPerHour: 100}, true, 100 * time.Hour, "4.2 days"},
		// design.md: 25 requests/s, one per row, 10 M rows ≈ 4.6 days.
		{"retrieve at 25/s", payrecon.PlanInput{Rows: 10_000_000, RowsPerSecond: 25}, true, time.Duration(10_000_000.0 / 25 * float64(time.Second)), "4.6 days"},
		{"nothing", payrecon.PlanInput{Rows: 10}, false, 0, "no sweep capacity"},
	}
	for _, c := range cases {
		got := payrecon.Plan(c.in)
		if got.Completes != c.completes {
			t.Errorf("%s: completes = %v", c.name, got.Completes)
		}
		if d := got.CycleTime - c.cycle; d > time.Second || d < -time.Second {
			t.Errorf("%s: cycle = %s, want %s", c.name, got.CycleTime, c.cycle)
		}
		if !strings.Contains(got.Verdict, c.words) {
			t.Errorf("%s: verdict %q lacks %q", c.name, got.Verdict, c.words)
		}
	}
}
