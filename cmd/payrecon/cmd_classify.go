package main

import (
	"fmt"

	"github.com/payrecon/payrecon"
)

type classifyCmd struct {
	Table  bool   `help:"Print the whole decision table, then the money rules and the settlement rules (Markdown; the README carries the same tables)."`
	JSON   bool   `help:"Print JSON."`
	Local  string `arg:"" optional:"" help:"Local status: pending, paid or failed."`
	Stripe string `arg:"" optional:"" help:"Stripe PaymentIntent status, or not_found."`
}

func (c *classifyCmd) Run(a *app) error {
	if c.Local != "" || c.Stripe != "" {
		if c.Local == "" || c.Stripe == "" {
			return usageError{fmt.Errorf("classify takes two statuses: payrecon classify <local> <stripe>")}
		}
		s := payrecon.StripeStatus(c.Stripe)
		if c.Stripe == "not_found" {
			s = payrecon.NotFound
		}
		d := payrecon.Classify(payrecon.LocalStatus(c.Local), s)
		if c.JSON {
			return a.printJSON(payrecon.Cell{Local: payrecon.LocalStatus(c.Local), Stripe: s, Decision: d})
		}
		fmt.Fprintf(a.stdout, "%s / %s: %s", c.Local, s, d.Verdict)
		if d.Kind != "" {
			fmt.Fprintf(a.stdout, ", kind %s", d.Kind)
		}
		if d.Command != "" {
			fmt.Fprintf(a.stdout, ", repair %s", d.Command)
		}
		fmt.Fprintf(a.stdout, "\n  %s\n", d.Reason)
		return nil
	}
	if !c.Table && !c.JSON {
		return usageError{fmt.Errorf("say what to classify: --table, or <local> <stripe>")}
	}
	if c.JSON {
		return a.printJSON(payrecon.DecisionTable())
	}
	fmt.Fprint(a.stdout, payrecon.FormatDecisionTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatSessionTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatMoneyTable())
	fmt.Fprint(a.stdout, "\n", payrecon.FormatSettlementTable())
	return nil
}
