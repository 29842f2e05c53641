-- Indexes on payments, the application's own busy table, are built
-- CONCURRENTLY so that migrating never blocks the application's writes. That
-- cannot run inside a transaction. If a build is interrupted, PostgreSQL
-- leaves an INVALID index that IF NOT EXISTS would skip: drop it and run
-- `payrecon migrate` again (see the README).

-- +goose NO TRANSACTION
-- +goose Up

-- Reconciliation lag from an index: the row least recently verified is the
-- first entry of this expression index (see queries/lag.sql).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_reconciled_order
    ON payments ((coalesce(last_reconciled_at, created_at)));

-- List mode estimates how many PaymentIntents a batch's creation-time
-- window holds from the local rows in it; growth per hour is read here too.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_created_at ON payments (created_at);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS payments_created_at;
DROP INDEX CONCURRENTLY IF EXISTS payments_reconciled_order;
