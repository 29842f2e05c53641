// Package payrecon is the domain of the payments reconciler: the local and
// Stripe statuses, the verdicts and finding kinds, the decision table and
// Classify, the repair commands and the transition table that the canonical
// writer, the classifier and the webhook handler all share, and the small
// interfaces (Gateway, Clock) that the services depend on; and settlement:
// payouts, their lines and totals, the payout's own check, and the
// settlement rules (SettlementChecks) the payouts check judges with.
//
// The package imports only the standard library and does no I/O: a drift is
// a value. It also holds the read models every reader shares: a Finding, a
// Payment, and what a finding puts at stake (Kind.StakeBasis).
//
// The other packages, by what they are (the README's Layout section names
// each, and a test keeps that list equal to `go list ./...`):
//
//   - leaves: readmodel (the console's read models), budget (the Stripe
//     rate budget), riverjobs (River jobs handed to the one River client);
//   - adapters, named after what they adapt: postgres, stripeapi, httpapi,
//     and stripesim (the Stripe simulator);
//   - services, which drive the domain and import no other service: sweep
//     (the scanner), catchup (the events catch-up: the events command),
//     relay (the River jobs: repair delivery, notifications, the prune, the
//     repairs held for review), settlement (the payouts check), action (the
//     finding actions of the CLI and the console), doctor (the checks of an
//     installation), and platform (a platform on Connect: it drives each
//     account's sweep and catch-up as River job chains);
//   - shells: console (the operator console), service (the run daemon),
//     cmd/payrecon (the CLI, wiring only), demo;
//   - internal/: the leased loop (leased), the SQL loader (sqlq),
//     redaction, database administration, throwaway clusters, the container
//     image, and the test helpers (pgtest, simtest, testkit, webhooktest,
//     browsertest).
//
// The module is github.com/payrecon/payrecon. Its examples show the
// embedding cases: a sweep on your own pool (package sweep), the canonical
// writer in your own webhook handler (package postgres), and
// VerifyNotification in a receiver of payrecon's notifications.
package payrecon
