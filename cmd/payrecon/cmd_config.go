package main

import ()

type configCmd struct {
	stripeFlags
	consoleFlags
	publicListenFlags
	JSON bool `help:"Print JSON."`
	retainFlags
	notifyFlags
	pruneIntervalFlag
	moneyFlags
	repairModeFlag
}

func (c *configCmd) Run(a *app) error {
	ignore, err := c.moneyFlags.ignore()
	if err != nil {
		return err
	}
	if _, err := c.moneyFlags.metadata(); err != nil {
		return err
	}
	if err := checkSecretList("STRIPE_WEBHOOK_SECRET (--stripe-webhook-secret)", c.WebhookSecret); err != nil {
		return err
	}
	return a.printSettings(a.stdout, c.JSON, a.cli.databaseSettings(), c.stripeFlags.settings(), c.publicListenFlags.settings(),
		c.consoleFlags.settings(), c.repairModeFlag.settings(), a.cli.logSettings(), c.retainFlags.settings(),
		c.pruneIntervalFlag.settings(), c.notifyFlags.settings(), c.moneyFlags.settings(ignore))
}
