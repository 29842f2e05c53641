-- The cursor and the next batch after it, in one statement so that both come
-- from one snapshot: the compare-and-set in commit_cursor.sql then compares
-- against exactly the position these rows were read from.
-- The local money columns, when payments has them, replace the two NULLs
-- (postgres.MoneyColumns: quoted identifiers the catalogue named); an
-- account's store (Connect) replaces the `true` with its account filter
-- (postgres.AccountColumn: an index range on payments_account_id); with the
-- session column, each row's Checkout Session replaces the '' (postgres.SessionColumn).
--   @job, @limit (and @account, for an account's store)
SELECT c.last_id, c.cycle_started_at, c.last_cycle_completed_at,
       p.id, p.stripe_payment_intent_id, p.status, p.version, p.created_at, p.updated_at,
       p.money_amount, p.money_currency, p.session_id
  FROM reconciliation_cursor c
  LEFT JOIN LATERAL (
        SELECT pay.id, pay.stripe_payment_intent_id, pay.status, pay.version, pay.created_at, pay.updated_at,
               NULL::bigint /*amount:pay*/ AS money_amount, NULL::text /*currency:pay*/ AS money_currency,
               ''::text /*session_of:pay*/ AS session_id
          FROM payments pay
         WHERE pay.id > c.last_id AND true /*account:pay*/
         ORDER BY pay.id
         LIMIT @limit
       ) p ON true
 WHERE c.job = @job
 ORDER BY p.id
