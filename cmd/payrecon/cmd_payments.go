package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon"
	"github.com/payrecon/payrecon/postgres"
)

type paymentsCmd struct {
	Show paymentsShowCmd `cmd:"" help:"Show one payment's history: its transitions (with their road), findings, repair commands and the webhooks seen."`
}

type paymentsShowCmd struct {
	Payment string `arg:"" name:"ID|ORDER|PI|CS" help:"The payment: its id, order id, PaymentIntent id, or Checkout Session id (with --session-column)."`
	JSON    bool   `help:"Print JSON."`
	sessionColumnFlag
}

// paymentHistory is what `payments show` prints.
type paymentHistory struct {
	Payment     payrecon.Payment             `json:"payment"`
	Transitions []payrecon.PaymentTransition `json:"transitions"`
	Findings    []payrecon.Finding           `json:"findings"`
	Repairs     []postgres.RepairCommand     `json:"repair_commands"`
	Webhooks    []postgres.IntentEvent       `json:"webhook_events"`
	// CheckoutSession is the session the row records (--session-column),
	// and SessionIntent the PaymentIntent payrecon saw on it (in the
	// newest finding's details) that the row does not record.
	CheckoutSession string `json:"checkout_session,omitempty"`
	SessionIntent   string `json:"session_payment_intent,omitempty"`
}

func (c *paymentsShowCmd) Run(a *app) error {
	pool, err := a.openMigratedDB()
	if err != nil {
		return err
	}
	defer pool.Close()
	repo := postgres.NewFindings(pool, nil)
	sessions, err := postgres.DetectSessionColumn(a.ctx, pool, c.SessionColumn)
	if err != nil {
		return err
	}
	q := c.Payment
	if strings.HasPrefix(q, "cs_") {
		id, err := repo.PaymentIDBySession(a.ctx, sessions, q)
		if err != nil {
			return err
		}
		if id != 0 {
			q = strconv.FormatInt(id, 10)
		}
	}
	p, err := repo.LookupPayment(a.ctx, q)
	if errors.Is(err, payrecon.ErrNotFound) {
		return fmt.Errorf("%w (see payrecon findings list)", err)
	}
	if err != nil {
		return err
	}
	h := paymentHistory{Payment: p}
	if h.Transitions, err = repo.Transitions(a.ctx, p.ID, 1000); err != nil {
		return err
	}
	if h.Findings, err = repo.List(a.ctx, postgres.FindingFilter{State: "all", PaymentID: p.ID, Limit: 1000}); err != nil {
		return err
	}
	if h.Repairs, err = repo.RepairCommands(a.ctx, p.ID, 1000); err != nil {
		return err
	}
	if h.CheckoutSession, err = repo.PaymentSession(a.ctx, sessions, p.ID); err != nil {
		return err
	}
	intent := p.IntentID
	if intent == "" && h.CheckoutSession != "" {
		h.SessionIntent = sessionIntent(h.Findings)
		intent = h.SessionIntent
	}
	if intent != "" {
		if h.Webhooks, err = repo.IntentEvents(a.ctx, intent, 1000); err != nil {
			return err
		}
	}
	if c.JSON {
		if h.Transitions == nil {
			h.Transitions = []payrecon.PaymentTransition{}
		}
		if h.Findings == nil {
			h.Findings = []payrecon.Finding{}
		}
		if h.Repairs == nil {
			h.Repairs = []postgres.RepairCommand{}
		}
		if h.Webhooks == nil {
			h.Webhooks = []postgres.IntentEvent{}
		}
		return a.printJSON(h)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	// Every value comes from the database, some from the application or
	// Stripe: control characters are shown escaped (term), never sent raw
	// to the terminal.
	fmt.Fprintf(tw, "payment\t%d, order %s, intent %s\n", p.ID, term(p.OrderID), term(orDefault(p.IntentID, "(none)")))
	if h.CheckoutSession != "" {
		seen := "no PaymentIntent seen yet"
		if h.SessionIntent != "" {
			seen = "its PaymentIntent " + term(h.SessionIntent) + " (not recorded by the row)"
		}
		fmt.Fprintf(tw, "checkout session\t%s, %s\n", term(h.CheckoutSession), seen)
	}
	fmt.Fprintf(tw, "now\t%s (version %d, updated %s)\n", term(string(p.Status)), p.Version, ago(now, p.UpdatedAt))
	last := "never"
	if p.LastReconciledAt != nil {
		last = fmt.Sprintf("%s, Stripe said %s", ago(now, *p.LastReconciledAt), term(string(p.ObservedStatus)))
	}
	fmt.Fprintf(tw, "last verified\t%s\n", last)
	printTransitions(tw, h.Transitions)
	if len(h.Findings) > 0 {
		fmt.Fprintf(tw, "\nfindings\t\n")
		for _, f := range h.Findings {
			state := "open"
			if !f.Open() {
				state = fmt.Sprintf("resolved (%s) by %s", term(string(*f.Resolution)), term(f.ResolvedBy))
			}
			fmt.Fprintf(tw, "  %s\t%d %s (%s), %s\n", f.DetectedAt.UTC().Format(time.RFC3339), f.ID, term(string(f.Kind)), term(string(f.Verdict)), state)
		}
	}
	if len(h.Repairs) > 0 {
		fmt.Fprintf(tw, "\nrepair commands\t\n")
		for _, r := range h.Repairs {
			outcome := "not applied yet"
			if r.ProcessedAt != nil {
				outcome = term(r.Outcome)
			}
			if r.LastError != "" {
				outcome += " (last error: " + term(r.LastError) + ")"
			}
			fmt.Fprintf(tw, "  %s\toutbox %d %s → %s\n", r.CreatedAt.UTC().Format(time.RFC3339), r.OutboxID, term(r.EventType), outcome)
		}
	}
	if len(h.Webhooks) > 0 {
		fmt.Fprintf(tw, "\nwebhooks\t\n")
		for _, e := range h.Webhooks {
			fmt.Fprintf(tw, "  %s\t%s %s → %s\n", e.ReceivedAt.UTC().Format(time.RFC3339), term(e.EventID), term(e.EventType), term(e.Outcome))
		}
	}
	return tw.Flush()
}

// printTransitions prints a payment's transitions (none: says so).
func printTransitions(w io.Writer, ts []payrecon.PaymentTransition) {
	if len(ts) == 0 {
		fmt.Fprintf(w, "\ntransitions\tnone\n")
		return
	}
	fmt.Fprintf(w, "\ntransitions\t\n")
	for _, t := range ts {
		by := term(string(t.Source))
		if t.SourceRef != "" {
			by += " " + term(t.SourceRef)
		}
		fmt.Fprintf(w, "  %s\t%d: %s → %s (version %d) by %s\n", t.OccurredAt.UTC().Format(time.RFC3339), t.ID,
			term(string(t.From)), term(string(t.To)), t.Version, by)
	}
}

// sessionIntent is the PaymentIntent of a session row's Checkout Session
// as the newest finding that saw one recorded it ("" when none did).
func sessionIntent(findings []payrecon.Finding) string {
	var at time.Time
	intent := ""
	for _, f := range findings {
		if f.Details != nil && f.Details.SessionIntent != "" && (intent == "" || f.DetectedAt.After(at)) {
			intent, at = f.Details.SessionIntent, f.DetectedAt
		}
	}
	return intent
}
