-- History that does not grow forever (postgres/prune.go): the pruner walks
-- each target's time column in order, a bounded batch at a time, so that
-- column must lead an index. stripe_webhook_events has one on received_at
-- (00004), reconciliation_findings on resolved_at (00002); the outbox's
-- processed commands get theirs here. Partial, like the pruner's range
-- (an unprocessed command, processed_at NULL, is never pruned), and built
-- CONCURRENTLY so the relay's writes never wait for it.

-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_processed
    ON outbox (processed_at) WHERE processed_at IS NOT NULL;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_processed;
