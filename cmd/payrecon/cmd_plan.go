package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

type planCmd struct {
	Rows        int64   `help:"N: rows to cover."`
	Batch       int64   `default:"200" help:"B: rows per run (a periodic sweep)."`
	RunsPerHour float64 `name:"runs-per-hour" help:"R: runs per hour (a periodic sweep, like the seed's hourly job)."`
	Growth      float64 `help:"G: new rows per hour."`
	RPS         float64 `name:"rps" help:"A continuous sweep instead: Stripe requests per second."`
	RowsPerReq  float64 `name:"rows-per-request" default:"1" help:"Rows verified per Stripe request: 1 in retrieve mode, about 100 in list mode (measured: 0.01 requests per row)."`
	FromDB      bool    `name:"from-db" help:"Take N, G and the throughput from the database (the measured sweep) instead of flags."`
	jobFlag
	Transactions int64 `help:"Transactions of the last 30 days (for Stripe's read allocation: 500 reads each, at least 10,000); with --from-db, the rows created in the last 30 days."`
	readShareFlag
	accountColumnFlag
	JSON bool `help:"Print JSON."`
}

func (c *planCmd) Run(a *app) error {
	for _, err := range []error{
		checkFinite("--runs-per-hour", c.RunsPerHour, false),
		checkFinite("--growth", c.Growth, false),
		checkFinite("--rps", c.RPS, false),
		checkFinite("--rows-per-request", c.RowsPerReq, false),
	} {
		if err != nil {
			return err
		}
	}
	switch {
	case c.Rows < 0:
		return usageError{fmt.Errorf("--rows must not be negative, got %d", c.Rows)}
	case c.Batch <= 0:
		return usageError{fmt.Errorf("--batch must be positive, got %d", c.Batch)}
	case c.RowsPerReq <= 0:
		return usageError{fmt.Errorf("--rows-per-request must be positive, got %g", c.RowsPerReq)}
	}
	in := payrecon.PlanInput{Rows: c.Rows, GrowthPerHour: c.Growth, Batch: c.Batch, RunsPerHour: c.RunsPerHour}
	if c.RPS > 0 {
		in.RowsPerSecond = c.RPS * c.RowsPerReq
	}
	source := "flags"
	if c.FromDB {
		pool, err := a.openMigratedDB()
		if err != nil {
			return err
		}
		defer closePool(pool)
		st, err := postgres.NewMonitor(pool).Status(a.ctx, a.clock.Now(), true, relay.Kind)
		if err != nil {
			return err
		}
		in.Rows, in.GrowthPerHour = st.Rows, st.NewRowsPerHour
		source = "database: rows counted, growth over the last 24 h"
		if in.RowsPerSecond == 0 && in.RunsPerHour == 0 {
			for _, j := range st.Jobs {
				if j.Job == c.Job && j.Throughput > 0 {
					in.RowsPerSecond = j.Throughput
					source += fmt.Sprintf(", throughput measured by job %s", c.Job)
				}
			}
			if in.RowsPerSecond == 0 {
				return errors.New("no measured throughput yet for job " + c.Job + ": sweep once, or give --rps or --runs-per-hour")
			}
		}
	} else if c.Rows <= 0 {
		return usageError{errors.New("give --rows (N), or --from-db")}
	}
	if in.RowsPerSecond == 0 && in.RunsPerHour <= 0 {
		return usageError{errors.New("give --runs-per-hour (a periodic sweep of --batch rows) or --rps (a continuous sweep)")}
	}
	r := payrecon.Plan(in)
	cycle := r.CycleTime
	alloc := allocationStatus{Share: c.ReadShare, Accounts: []accountAllocation{}}
	if c.FromDB {
		if err := c.allocationFromDB(a, cycle, &alloc); err != nil {
			return err
		}
	} else {
		p := payrecon.Allocate(payrecon.AllocationInput{Rows: r.Rows, Transactions: c.Transactions, ReadsPerRow: 1 / c.RowsPerReq, Cycle: cycle, Share: c.ReadShare})
		alloc.Platform = &p
	}
	if c.JSON {
		return a.printJSON(map[string]any{"source": source, "plan": r, "read_allocation": alloc})
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "rows (N)\t%d\n", r.Rows)
	fmt.Fprintf(tw, "growth (G)\t%.0f rows/h\n", r.GrowthPerHour)
	if r.RowsPerSecond > 0 {
		fmt.Fprintf(tw, "capacity\t%.0f rows/h (%.1f rows/s, continuous)\n", r.CapacityPerHour, r.RowsPerSecond)
	} else {
		fmt.Fprintf(tw, "capacity (B × R)\t%.0f rows/h (%d rows × %g runs/h)\n", r.CapacityPerHour, r.Batch, r.RunsPerHour)
	}
	fmt.Fprintf(tw, "margin\t%.0f rows/h\n", r.MarginPerHour)
	fmt.Fprintf(tw, "from\t%s\n", source)
	_ = tw.Flush()
	fmt.Fprintln(a.stdout, r.Verdict)
	printAllocation(a.stdout, alloc)
	return nil
}

// allocationFromDB projects each account's reads at the planned cycle.
func (c *planCmd) allocationFromDB(a *app, cycle time.Duration, out *allocationStatus) error {
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	col, err := postgres.DetectAccountColumn(a.ctx, pool, c.AccountColumn)
	if err != nil {
		return err
	}
	vols, err := postgres.AccountVolumes(a.ctx, pool, col, a.clock.Now().Add(-payrecon.AllocationWindow))
	if err != nil {
		return err
	}
	var total payrecon.AllocationInput
	for _, v := range vols {
		out.Accounts = append(out.Accounts, accountAllocation{Account: v.Account, AllocationResult: payrecon.Allocate(payrecon.AllocationInput{
			Rows: v.Rows, Transactions: v.Recent, ReadsPerRow: 1 / c.RowsPerReq, Cycle: cycle, Share: c.ReadShare})})
		total.Rows += v.Rows
		total.Transactions += v.Recent
	}
	p := payrecon.Allocate(payrecon.AllocationInput{Rows: total.Rows, Transactions: total.Transactions, ReadsPerRow: 1 / c.RowsPerReq, Cycle: cycle, Share: c.ReadShare})
	out.Platform = &p
	return nil
}
