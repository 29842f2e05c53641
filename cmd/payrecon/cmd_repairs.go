package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon/action"
	"github.com/payrecon/payrecon/postgres"
	"github.com/payrecon/payrecon/relay"
)

// repairsCmd is `payrecon repairs`: the repair commands held for review
// (--repair-mode review).
type repairsCmd struct {
	List    repairsListCmd    `cmd:"" help:"List the repair commands held for review (--repair-mode review) whose finding is still open, the longest-waiting first."`
	Approve repairsApproveCmd `cmd:"" help:"Approve held repair commands by id (or --all): a running payrecon run, relay or relay --drain applies each exactly once; one whose finding closed meanwhile is dropped, never applied."`
}

type repairsListCmd struct {
	Limit int  `default:"1000" help:"At most this many."`
	JSON  bool `help:"Print JSON."`
}

func (c *repairsListCmd) Run(a *app) error {
	if err := checkPositiveInt("--limit", c.Limit); err != nil {
		return err
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	held, err := postgres.NewMonitor(pool).HeldRepairs(a.ctx, c.Limit)
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(held)
	}
	if len(held) == 0 {
		fmt.Fprintln(a.stdout, "no repair commands held for review")
		return nil
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMMAND\tFINDING\tKIND\tPAYMENT\tORDER\tINTENT\tLOCAL/STRIPE\tNOW\tHELD")
	for _, h := range held {
		pay := "—"
		if h.PaymentID != nil {
			pay = fmt.Sprint(*h.PaymentID)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\n", h.OutboxID, term(string(h.Command)), h.FindingID, term(string(h.Kind)),
			pay, term(orDefault(h.OrderID, "—")), term(h.IntentID), term(h.LocalStatus), term(orDefault(h.ExternalStatus, "—")),
			term(orDefault(h.Status, "(gone)")), ago(now, h.HeldAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, "approve with: payrecon repairs approve ID… (or --all)")
	return nil
}

type repairsApproveCmd struct {
	IDs  []int64 `arg:"" optional:"" name:"id" help:"Held repair command ids (the ID column of payrecon repairs list)."`
	All  bool    `help:"Approve every held repair command."`
	By   string  `help:"Who approves (default: $USER); recorded on each command."`
	JSON bool    `help:"Print JSON."`
}

func (c *repairsApproveCmd) Run(a *app) error {
	by := strings.TrimSpace(c.By)
	if by == "" {
		by = a.getenv("USER")
	}
	switch {
	case by == "":
		return usageError{errors.New("say who approves: --by NAME (or set USER)")}
	case c.All && len(c.IDs) > 0:
		return usageError{errors.New("give command ids or --all, not both")}
	case !c.All && len(c.IDs) == 0:
		return usageError{errors.New("say what to approve: command ids (payrecon repairs list), or --all")}
	}
	for _, id := range c.IDs {
		if id <= 0 {
			return usageError{fmt.Errorf("command id %d: ids are positive", id)}
		}
	}
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer closePool(pool)
	rl, err := a.insertOnlyRelay(pool)
	if err != nil {
		return err
	}
	acts, err := action.New(pool, action.Config{Relay: rl})
	if err != nil {
		return err
	}
	rep, err := acts.ApproveRepairs(a.ctx, c.IDs, c.All, action.By{Operator: by})
	if err != nil {
		return err
	}
	if c.JSON {
		return a.printJSON(rep)
	}
	printApproval(a, rep, by)
	if len(rep.NotHeld) > 0 {
		return fmt.Errorf("%d of the commands asked for were not held (already approved, applied or dropped, or no such command): %s",
			len(rep.NotHeld), joinIDs(rep.NotHeld))
	}
	return nil
}

func printApproval(a *app, rep relay.ApproveReport, by string) {
	fmt.Fprintf(a.stdout, "approved by %s: %d repair commands", by, len(rep.Approved))
	if len(rep.Approved) > 0 {
		fmt.Fprintf(a.stdout, " (%s); a running payrecon run or relay applies them, or payrecon relay --drain", joinSettled(rep.Approved))
	}
	fmt.Fprintln(a.stdout)
	for _, d := range rep.Dropped {
		fmt.Fprintf(a.stdout, "dropped %d, never applied: %s\n", d.OutboxID, strings.TrimPrefix(d.Dropped, relay.OutcomeDroppedPrefix))
	}
}

func joinSettled(s []relay.Settled) string {
	ids := make([]int64, len(s))
	for i, x := range s {
		ids[i] = x.OutboxID
	}
	return joinIDs(ids)
}

func joinIDs(ids []int64) string {
	const show = 20
	parts := make([]string, 0, min(len(ids), show))
	for i, id := range ids {
		if i == show {
			parts = append(parts, fmt.Sprintf("… %d more", len(ids)-show))
			break
		}
		parts = append(parts, fmt.Sprint(id))
	}
	return strings.Join(parts, ", ")
}
