// Package stripesim is an in-process Stripe simulator: a real HTTP server on
// 127.0.0.1 that answers the part of Stripe's API payrecon uses with Stripe's
// JSON shapes, errors and semantics, and whose state and faults tests change
// from Go.
//
// Endpoints:
//
//	GET /v1/payment_intents/{id}  a PaymentIntent, or 404 resource_missing;
//	                              expand[]=latest_charge
//	GET /v1/payment_intents       created[gt|gte|lt|lte], created=<ts>, limit,
//	                              starting_after, ending_before; newest first;
//	                              expand[]=data.latest_charge
//	GET /v1/events                type, types[], delivery_success, created[...],
//	                              limit, starting_after, ending_before; newest
//	                              first, ending_before included
//	GET /v1/payouts               created[...], status, limit, starting_after,
//	                              ending_before; newest first
//	GET /v1/payouts/{id}          a Payout, or 404 resource_missing
//	GET /v1/balance_transactions  payout, type, created[...], limit, cursors;
//	                              expand[]=data.source; a manual payout's are
//	                              refused (400), as Stripe does
//
// Every request must carry "Authorization: Bearer <Config.SecretKey>"; any
// other key is answered 401 as Stripe does. Unknown parameters, an
// out-of-range limit, unknown cursors and any other expansion ("This property
// cannot be expanded") are answered 400. Any other path is 404 "Unrecognized
// request URL".
//
// Money: an intent has an amount, a currency (lower case) and, once
// succeeded, a charge ("ch_…") that captured AmountReceived (less than the
// amount for an intent captured for less). Without expansion latest_charge is
// the charge's id, as in Stripe; expanded, it is Stripe's Charge object
// (amount_captured, amount_refunded, refunded, disputed, …). Payment intents
// that have not succeeded have no charge (latest_charge null).
//
// State: Put, Create, Seed (bulk, fast enough for millions of intents),
// SetStatus (records the matching payment_intent.* event), SetMoney (amount,
// amount received, currency; no event), Refund (full or partial, cumulative,
// never more than captured; records charge.refunded with the Charge as
// data.object), Dispute (records charge.dispute.created with the Dispute as
// data.object), Delete (the id then answers 404), Get and Count. Intents are kept in a sorted index, so a list
// request costs a binary search and one page of copying however many intents
// there are.
//
// Payouts: CreatePayout settles succeeded intents' charges into an automatic
// payout (a charge line with FeeFor's fee, a refund line for what was
// refunded, a dispute adjustment with DisputeFee for a disputed charge),
// with extra fee and adjustment lines, the payout's own line, and an amount
// that is the lines' net (or off by PayoutSpec.AmountDelta); or a manual
// payout with no lines. SetPayoutStatus and CompletePayoutReconciliation
// move it on; each records its payout.* event (data.object the Payout).
// Payouts: Read (rak_payout_read) and Balance: Read (rak_balance_read) can
// be withheld like the other permissions.
//
// Faults (SetFaults, FailNext, FailID) are concurrency-safe, can be changed
// while requests are in flight, and draw their randomness from one source
// seeded by Config.Seed: latency with jitter, a token-bucket rate limit
// answered with Stripe's 429 body, 5xx answers (Stripe's 500 api_error JSON,
// and the HTML 502/503/504 a load balancer sends), hangs that hold a request
// until the client gives up or the server closes, 401/403 toggles, and a
// restricted key missing named permissions (Faults.MissingPermissions:
// rak_payment_intent_read, rak_charge_read for the charge expansion,
// rak_event_read for /v1/events), answered 403 with Stripe's message naming
// the permission.
// Stats counts requests by endpoint and by status.
//
// Webhooks: SetWebhook configures an endpoint URL and signing secret;
// DeliverPending and RetryFailed POST the recorded events there, signed with
// "Stripe-Signature: t=<unix>,v1=<hex hmac-sha256>" exactly as Stripe signs,
// optionally dropping, duplicating and reordering deliveries. Each event
// remembers whether a delivery succeeded, which is what
// GET /v1/events?delivery_success=false reports.
//
// The simulator is not Stripe: there are no customers, no charges of their
// own (a charge exists only as a succeeded intent's latest charge; there is no
// /v1/charges), no refund or dispute objects beyond the events' data.object,
// no writes over HTTP, no search, and payment intents never move by
// themselves.
package stripesim
