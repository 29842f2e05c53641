-- Rows whose early recheck is due. The local money columns, when payments
-- has them, replace the two NULLs (postgres.MoneyColumns); an account's
-- store keeps only rows still of its account; with the session column, each
-- row's Checkout Session replaces the '' (postgres.SessionColumn).
--   @job, @now, @limit (and @account, for an account's store)
SELECT p.id, p.stripe_payment_intent_id, p.status, p.version, p.created_at, p.updated_at, r.attempts,
       NULL::bigint /*amount:p*/, NULL::text /*currency:p*/, ''::text /*session_of:p*/
  FROM reconciliation_recheck r
  JOIN payments p ON p.id = r.payment_id
 WHERE r.job = @job AND r.due_at <= @now AND true /*account:p*/
 ORDER BY r.due_at
 LIMIT @limit
