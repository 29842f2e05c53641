-- Repair commands not yet applied, and the creation time of the oldest
-- (NULL when none), from outbox_unprocessed; commands held for review and
-- not approved (migration 00022) are not a backlog: held_repairs_count.sql
-- counts them.
SELECT count(*), min(created_at)
  FROM outbox
 WHERE processed_at IS NULL
   AND (held_at IS NULL OR approved_at IS NOT NULL)
