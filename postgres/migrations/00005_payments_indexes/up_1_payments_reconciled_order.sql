-- Migration 00005 (a Go migration since 00013 was written: it runs these
-- statements only when payments is a plain table; a view has no indexes of
-- its own, and PostgreSQL cannot build one CONCURRENTLY on a partitioned
-- table: index the application's table yourself, docs/payments-table.md).
-- The statements are those of the SQL migration it replaces, so a table gets
-- exactly what it always got.
--
-- Indexes on payments, the application's own busy table, are built
-- CONCURRENTLY so that migrating never blocks the application's writes. That
-- cannot run inside a transaction: one statement per file, each on its own.
-- If a build is interrupted, PostgreSQL leaves an INVALID index that IF NOT
-- EXISTS would skip: drop it and run `payrecon migrate` again (see the
-- README).
--
-- Reconciliation lag from an index: the row least recently verified is the
-- first entry of this expression index (see queries/lag.sql).
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_reconciled_order
    ON payments ((coalesce(last_reconciled_at, created_at)))
