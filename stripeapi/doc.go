// Package stripeapi is payrecon's Gateway to Stripe, built on stripe-go v85.
//
// It reads PaymentIntents one at a time (RetrieveIntent) or one list page at
// a time (ListIntents), each with its latest charge expanded in the same
// request (amount captured, refunded, disputed), and events one list page at
// a time (ListEvents, each event's JSON exactly as Stripe sent it), and
// payouts and each automatic payout's balance transactions with their sources
// expanded (ListPayouts, RetrievePayout, ListPayoutLines: payrecon.PayoutSource),
// under a connected account's Stripe-Account header when one is named. CheckAccess
// makes one cheap request per resource at start-up and names the permission a
// restricted key lacks. Every call retries what is worth retrying and
// translates every failure into the three kinds the sweep acts on:
//
//   - payrecon.ErrNotFound: 404 resource_missing, the intent does not exist.
//   - *payrecon.UnavailableError (matches payrecon.ErrUnavailable): timeouts,
//     connection errors, 429 and 5xx after the retries; the row is
//     unverifiable. RateLimited and RetryAfter tell the limiter to slow down.
//   - *payrecon.ConfigError (matches payrecon.ErrConfig): 401 (the key was
//     rejected), 403 (a restricted key lacks a permission: the Cause names it
//     as the Dashboard does, e.g. "Charges: Read"), any other 4xx; nothing
//     will succeed until a person changes the configuration.
//
// A context canceled or timed out by the caller comes back as the context's
// own error, never as unavailable, so a sweep that is told to stop stops. A
// per-attempt timeout (Config.Timeout) is unavailable and does not match
// context.DeadlineExceeded. When the wait before a retry would outlast the
// caller's deadline, the gateway returns the unavailable error at once.
//
// stripe-go's own retries and logging are switched off: its retries skip
// 429s and ignore Retry-After, and its logger is not slog. This package
// retries 409, 429, 5xx, transport errors and timeouts, and any answer with
// "Stripe-Should-Retry: true", never one with "Stripe-Should-Retry: false";
// it waits the longer of an exponential backoff with jitter and Stripe's
// Retry-After (capped). The secret key never appears in an error or a log
// line: Stripe's own messages are not trusted to be free of it.
package stripeapi
