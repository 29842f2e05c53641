-- The cursor and the next batch after it, in one statement so that both come
-- from one snapshot: the compare-and-set in commit_cursor.sql then compares
-- against exactly the position these rows were read from.
--   @job, @limit
SELECT c.last_id, c.cycle_started_at, c.last_cycle_completed_at,
       p.id, p.stripe_payment_intent_id, p.status, p.version, p.created_at, p.updated_at
  FROM reconciliation_cursor c
  LEFT JOIN LATERAL (
        SELECT id, stripe_payment_intent_id, status, version, created_at, updated_at
          FROM payments
         WHERE id > c.last_id
         ORDER BY id
         LIMIT @limit
       ) p ON true
 WHERE c.job = @job
 ORDER BY p.id
