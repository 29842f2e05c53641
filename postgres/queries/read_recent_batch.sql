-- The recent window's next batch (run --recent): rows created at or after
-- @since, in (created_at, id) order, after the row the cursor names (from
-- @since when the cursor is 0, names a row older than the window, or a row
-- that no longer exists). The cursor stays a payments id, so the
-- compare-and-set and the wrap are the full sweep's (commit_cursor.sql,
-- wrap_cursor.sql). The rows come from an index range on
-- payments_created_at (created_at >= position), ordered by id within equal
-- created_at by an incremental sort: never a scan of the table.
-- The local money columns, when payments has them, replace the two NULLs
-- (postgres.MoneyColumns); with the session column, each row's Checkout
-- Session replaces the '' (postgres.SessionColumn).
--   @job, @limit, @since (now minus the window)
SELECT c.last_id, c.cycle_started_at, c.last_cycle_completed_at,
       p.id, p.stripe_payment_intent_id, p.status, p.version, p.created_at, p.updated_at,
       p.money_amount, p.money_currency, p.session_id
  FROM reconciliation_cursor c
  LEFT JOIN payments cp ON cp.id = c.last_id
 CROSS JOIN LATERAL (
        SELECT CASE WHEN cp.created_at >= @since THEN cp.created_at ELSE @since::timestamptz END AS at,
               CASE WHEN cp.created_at >= @since THEN c.last_id ELSE 0 END AS after_id
       ) pos
  LEFT JOIN LATERAL (
        SELECT pay.id, pay.stripe_payment_intent_id, pay.status, pay.version, pay.created_at, pay.updated_at,
               NULL::bigint /*amount:pay*/ AS money_amount, NULL::text /*currency:pay*/ AS money_currency,
               ''::text /*session_of:pay*/ AS session_id
          FROM payments pay
         WHERE pay.created_at >= pos.at
           AND (pay.created_at, pay.id) > (pos.at, pos.after_id)
           AND true /*account:pay*/
         ORDER BY pay.created_at, pay.id
         LIMIT @limit
       ) p ON true
 WHERE c.job = @job
 ORDER BY p.created_at, p.id
