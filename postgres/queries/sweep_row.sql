-- One payment as the sweep reads it (a one-off recheck). The local money
-- columns, when payments has them, replace the two NULLs
-- (postgres.MoneyColumns); with the account column, its account replaces
-- the '' (postgres.AccountColumn), and with the session column the row's
-- Checkout Session the second (postgres.SessionColumn).
--   @id
SELECT p.id, coalesce(p.stripe_payment_intent_id::text, ''), p.status, p.version, p.created_at, p.updated_at,
       NULL::bigint /*amount:p*/, NULL::text /*currency:p*/, ''::text /*account_of:p*/,
       ''::text /*session_of:p*/
  FROM payments p
 WHERE p.id = @id
