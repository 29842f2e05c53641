// Package stripesim is an in-process Stripe simulator: a real HTTP server on
// 127.0.0.1 that answers the part of Stripe's API payrecon uses with Stripe's
// JSON shapes, errors and semantics, and whose state and faults tests change
// from Go.
//
// Endpoints:
//
//	GET /v1/payment_intents/{id}  a PaymentIntent, or 404 resource_missing
//	GET /v1/payment_intents       created[gt|gte|lt|lte], created=<ts>, limit,
//	                              starting_after, ending_before; newest first
//	GET /v1/events                type, types[], delivery_success, created[...],
//	                              limit, starting_after, ending_before
//
// Every request must carry "Authorization: Bearer <Config.SecretKey>"; any
// other key is answered 401 as Stripe does. Unknown parameters, an
// out-of-range limit and unknown cursors are answered 400. Any other path is
// 404 "Unrecognized request URL".
//
// State: Put, Create, Seed (bulk, fast enough for millions of intents),
// SetStatus (records the matching payment_intent.* event), Delete (the id then
// answers 404), Get and Count. Intents are kept in a sorted index, so a list
// request costs a binary search and one page of copying however many intents
// there are.
//
// Faults (SetFaults, FailNext, FailID) are concurrency-safe, can be changed
// while requests are in flight, and draw their randomness from one source
// seeded by Config.Seed: latency with jitter, a token-bucket rate limit
// answered with Stripe's 429 body, 5xx answers (Stripe's 500 api_error JSON,
// and the HTML 502/503/504 a load balancer sends), hangs that hold a request
// until the client gives up or the server closes, and 401/403 toggles.
// Stats counts requests by endpoint and by status.
//
// Webhooks: SetWebhook configures an endpoint URL and signing secret;
// DeliverPending and RetryFailed POST the recorded events there, signed with
// "Stripe-Signature: t=<unix>,v1=<hex hmac-sha256>" exactly as Stripe signs,
// optionally dropping, duplicating and reordering deliveries. Each event
// remembers whether a delivery succeeded, which is what
// GET /v1/events?delivery_success=false reports.
//
// The simulator is not Stripe: there are no customers, charges, writes over
// HTTP or search, and payment intents never move by themselves.
package stripesim
