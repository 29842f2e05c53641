-- Repair commands held for review (repair mode review) whose finding is
-- still open, and when the longest-waiting of them was held (NULL when
-- none), from outbox_held. Held commands whose finding closed are left
-- out: they are dropped, never applied.
SELECT count(*), min(o.held_at)
  FROM outbox o
  JOIN reconciliation_findings f
    ON f.id = CASE WHEN o.payload->>'finding_id' ~ '^[0-9]{1,18}$' THEN (o.payload->>'finding_id')::bigint END
 WHERE o.held_at IS NOT NULL AND o.approved_at IS NULL AND o.processed_at IS NULL
   AND f.resolved_at IS NULL
