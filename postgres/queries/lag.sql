-- Reconciliation lag: the time the row least recently verified was verified
-- (or created, if never), from payrecon's own tables, without an index on
-- payments' last_reconciled_at (migration 00015 dropped it so that every
-- verification is a HOT update):
--   * the full sweep job (not a recent window, @recent_suffix) whose last
--     completed cycle began latest: every row after its cursor was last
--     visited by that cycle, so no earlier than it began; every row before
--     it by the current cycle, later still;
--   * a row visited but not verified (Stripe unanswered, changed locally,
--     inside the grace window) stays in that job's recheck queue until it
--     is, with its last verification when it was queued (verified_before,
--     the first entry of reconciliation_recheck_verified_before; rows
--     queued before migration 00018 are looked up in payments);
--   * before any cycle completed, the rows after the cursor count with
--     their own times (a scan of the rest of the table, once);
--   * with no sweep job at all, every row does (a scan).
-- No row: payments is empty.
--   @recent_suffix   payrecon.RecentJobSuffix
WITH c AS (
    SELECT job, last_id, cycle_started_at, last_cycle_started_at
      FROM reconciliation_cursor
     WHERE right(job, length(@recent_suffix::text)) <> @recent_suffix::text
     ORDER BY last_cycle_started_at DESC NULLS LAST, cycle_started_at
     LIMIT 1
)
SELECT CASE
         WHEN NOT EXISTS (SELECT 1 FROM c) THEN
           (SELECT min(coalesce(last_reconciled_at, created_at)) FROM payments)
         ELSE
           (SELECT least(
                     coalesce(c.last_cycle_started_at,
                              least(c.cycle_started_at,
                                    (SELECT min(coalesce(p.last_reconciled_at, p.created_at))
                                       FROM payments p WHERE p.id > c.last_id))),
                     (SELECT min(r.verified_before) FROM reconciliation_recheck r
                       WHERE r.job = c.job AND r.verified_before IS NOT NULL),
                     (SELECT min(coalesce(p.last_reconciled_at, p.created_at))
                        FROM reconciliation_recheck r JOIN payments p ON p.id = r.payment_id
                       WHERE r.job = c.job AND r.verified_before IS NULL))
              FROM c)
       END
 WHERE (SELECT id FROM payments ORDER BY id LIMIT 1) IS NOT NULL -- by the primary key
