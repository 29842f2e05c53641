-- Repair commands not yet applied, and the creation time of the oldest
-- (NULL when none), from outbox_unprocessed.
SELECT count(*), min(created_at) FROM outbox WHERE processed_at IS NULL
