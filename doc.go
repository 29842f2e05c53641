// Package payrecon is the domain of the payments reconciler: the local and
// Stripe statuses, the verdicts and finding kinds, the decision table and
// Classify, the repair commands and the transition table that the canonical
// writer, the classifier and the webhook handler all share, and the small
// interfaces (Gateway, Clock) that the services depend on; and settlement:
// payouts, their lines and totals, the payout's own check, and the
// settlement rules (SettlementChecks) the payouts check judges with.
//
// The package imports only the standard library and does no I/O: a drift is
// a value. Adapters live in subpackages named after what they adapt
// (postgres, stripeapi, httpapi, stripesim); the services that drive the
// domain are sweep (the scanner), catchup (the events catch-up), settlement
// (the payouts check) and relay (repair delivery, and the repairs held for
// review: RepairMode); doctor checks an installation; console and service
// are the shells.
//
// The module is github.com/payrecon/payrecon. Its examples show the
// embedding cases: a sweep on your own pool (package sweep), the canonical
// writer in your own webhook handler (package postgres), and
// VerifyNotification in a receiver of payrecon's notifications.
package payrecon
