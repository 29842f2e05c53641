// Package relay delivers repair commands to the canonical writer on River,
// PostgreSQL's job queue.
//
// Every repair command is a row in the outbox table: the record of the
// command, and the contract other producers (and Debezium) can use. Its
// delivery is a River job of kind [Kind] in queue [Queue] whose only argument
// is the outbox id. The sweep inserts the job with InsertManyTx in the same
// transaction as the finding and the outbox row (through
// [Relay.EnqueueFunc], installed as postgres.Store.EnqueueFunc), so a
// command exists exactly when its delivery does, nothing sits between
// commit and delivery, and River's insert notification (LISTEN/NOTIFY) wakes
// an idle worker at once. Jobs are unique by outbox id in every state: the
// same command is never enqueued twice. Commands written without a job (by
// another producer, or before the relay was wired in) are enqueued by
// [Relay.EnqueueUnprocessed].
//
// # Delivery is at least once; effects are exactly once
//
// River delivers a job at least once: a worker may crash after applying a
// command but before River records it, a stuck job is rescued and run again,
// an operator may retry. The effect still happens once, because a worker
// applies the command and completes the job in one transaction:
//
//  1. postgres.Writer.ApplyRepair locks the outbox row (SELECT … FOR UPDATE).
//     A row whose processed_at is set was applied before: nothing is done.
//  2. The transition is payrecon_transition, the same PostgreSQL function
//     the webhook's statement calls: it locks the payment and moves it only
//     from one of the command's sources, so a webhook racing the repair
//     cannot make it apply twice or move the payment backwards; the finding
//     is resolved only if the payment is in the command's target state
//     afterwards.
//  3. ApplyRepair sets the outbox row's processed_at and outcome, and
//     river.JobCompleteTx marks the job completed, in the same transaction.
//  4. The transaction commits: the effect, the record of it, and "done" are
//     one atomic fact. If it rolls back (crash, error, timeout), none of them
//     happened and the next delivery starts from scratch. Two deliveries of
//     the same command serialise on the outbox row lock, and the second sees
//     processed_at.
//
// # Failures and dead letters
//
// A transient failure (the database, a lock timeout) returns the error to
// River, which retries with its backoff (or Config.RetryPolicy) and, after
// Config.MaxAttempts attempts, discards the job: the dead letter. A
// permanently invalid command (an unknown event_type, a bad payload, a
// missing outbox row or finding: postgres.InvalidCommandError) is ended at
// once with river.JobCancel and lands in River's cancelled state; River has no
// documented way for a worker to discard a job before its attempts run out.
// Both states count as dead letters: [Relay.DeadLetters] lists them,
// [Relay.Retry] (River's JobRetry) makes one available again, and they are
// kept until an operator acts (Config.DeadLetterRetention). Every failure is
// also written to the outbox row's last_error, in its own statement after the
// failed transaction rolled back, so the record of the command says why it is
// not applied; a later success clears it.
//
// River does the rest: attempts and backoff, rescue of jobs stuck on a dead
// worker (Config.RescueStuckJobsAfter), leader election and cleanup.
package relay
