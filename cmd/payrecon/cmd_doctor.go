package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/payrecon/payrecon/doctor"
	"github.com/payrecon/payrecon/stripeapi"
)

// doctorCmd is `payrecon doctor`: run's flags and environment, checked
// before a first day. It only reads.
type doctorCmd struct {
	runCmd
	Replicas   int  `default:"2" help:"How many payrecon run replicas will share the database (the connections check)."`
	PingNotify bool `name:"ping-notify" help:"Send the notification URL one signed test delivery (type payrecon.test, id 0) and expect a 2xx."`
	JSON       bool `help:"Print JSON."`
}

func (c *doctorCmd) Run(a *app) error {
	if err := checkPositiveInt("--replicas", c.Replicas); err != nil {
		return err
	}
	if err := checkPositiveInt("--db-max-conns", a.cli.DBMaxConns); err != nil {
		return err
	}
	password, err := c.consoleFlags.password()
	if err != nil {
		return err
	}
	nc := c.notifyFlags
	cfg := doctor.Config{
		DatabaseURL: a.cli.DatabaseURL, Replicas: c.Replicas, DBMaxConns: a.cli.DBMaxConns,
		StripeSecretKey: c.StripeSecretKey, RPS: c.RPS, MinCycle: c.MinCycle, SweepMode: c.Mode,
		AmountColumn: c.AmountColumn, CurrencyColumn: c.CurrencyColumn,
		EventsInterval: c.EventsInterval, RecentWindow: c.Recent, RecentInterval: c.RecentInterval, PayoutsInterval: c.PayoutsInterval,
		WebhookSecrets: c.WebhookSecret, PingNotify: c.PingNotify,
		AdminAddr: c.AdminAddr, ConsolePassword: password,
		AccountColumn: c.AccountColumn, SessionColumn: c.SessionColumn, ReadShare: c.ReadShare,
		Logger: a.logger,
	}
	cfg.Notify.URL, cfg.Notify.Secret = nc.NotifyURL, nc.NotifySecret
	if c.StripeSecretKey != "" && c.stripeFlags.check() == nil {
		if gw, err := stripeapi.New(stripeapi.Config{SecretKey: c.StripeSecretKey, APIBase: c.StripeAPIBase, Timeout: c.StripeTimeout,
			MaxRetries: -1, Logger: a.logger.With("component", "stripe")}); err == nil {
			cfg.Gateway = gw
		}
	}
	ctx, cancel := context.WithTimeout(a.ctx, 2*time.Minute)
	defer cancel()
	rep := doctor.Run(ctx, cfg)
	if c.JSON {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		printDoctor(a, rep)
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d of %d checks failed", rep.Failed, len(rep.Results))
	}
	return nil
}

func printDoctor(a *app, rep doctor.Report) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, r := range rep.Results {
		line := term(r.Detail)
		if r.Fix != "" {
			line += ". Fix: " + term(r.Fix) + "."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(string(r.Status)), r.Check, line)
	}
	_ = tw.Flush()
	fmt.Fprintf(a.stdout, "%d checks: %d failed, %d warned\n", len(rep.Results), rep.Failed, rep.Warned)
}
