-- Two changes for issue 13, one file (each statement runs on its own: DROP
-- INDEX CONCURRENTLY cannot run inside a transaction).
--
-- 1. Leases with a heartbeat (postgres/lease.go). A job's lease is this row:
--    `epoch` is bumped by every holder that takes it (the fencing token:
--    every batch commits only while the epoch is still its own, checked in
--    the batch's transaction with FOR SHARE so that a takeover waits for a
--    commit in progress), `heartbeat_at` is renewed every third of the
--    lease timeout by the database clock. The holder also keeps a session
--    advisory lock on (job, epoch): when its session ends (the process
--    died) a standby takes over at once; when the session stays but the
--    heartbeats stop (SIGSTOP, a paused VM) it takes over once heartbeat_at
--    is older than its --lease-timeout.
--
-- 2. Verification becomes a HOT update. payments_reconciled_order (00005)
--    indexed coalesce(last_reconciled_at, created_at), so every verified row
--    was a non-HOT update that wrote an entry into every index of the
--    application's busiest table (491-697 WAL bytes a row, 0 % HOT). The lag
--    is now computed from payrecon's own tables (queries/lag.sql: the sweep
--    cursor's cycle times and the recheck queue), and the index goes. No
--    index of payrecon's may name last_reconciled_at or
--    observed_external_status (a partial index's predicate counts too).
--    IF EXISTS: a view standing in for payments never had it.

-- +goose NO TRANSACTION
-- +goose Up
CREATE TABLE IF NOT EXISTS payrecon_leases (
    job          text        PRIMARY KEY,
    epoch        bigint      NOT NULL,
    holder       text        NOT NULL,
    holder_pid   integer     NOT NULL,
    acquired_at  timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    released     boolean     NOT NULL DEFAULT false
);

DROP INDEX CONCURRENTLY IF EXISTS payments_reconciled_order;

-- +goose Down
-- The index is not rebuilt here (payments may be a view, and a build on a
-- large table is the operator's call): going back below 00005 and up again
-- rebuilds it.
DROP TABLE IF EXISTS payrecon_leases;
