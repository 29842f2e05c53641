-- The local payment of a Checkout Session and its status, for a
-- checkout.session.* event: no row when there is none. The session column
-- (postgres.SessionColumn) replaces the '' below; only rows that record no
-- PaymentIntent are session rows (a row with both is an intent row, and the
-- payment_intent.* events apply to it). Read inside the event's
-- transaction; nothing is locked (the canonical writer locks it).
-- With the account column, the row's account replaces the second ''
-- (postgres.AccountColumn).
--   @session_id
SELECT p.id, p.status, ''::text /*account_of:p*/
  FROM payments p
 WHERE ''::text /*session_of:p*/ = @session_id
   AND coalesce(p.stripe_payment_intent_id, '') = ''
 ORDER BY p.id
 LIMIT 1
