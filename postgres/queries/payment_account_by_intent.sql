-- The payment of a PaymentIntent and the account its row records ("" for
-- the platform's); the account expression replaces the marker
-- (postgres.AccountColumn).
--   @intent_id
SELECT p.id, coalesce(p.status, ''), ''::text /*account_of:p*/
  FROM payments p
 WHERE p.stripe_payment_intent_id = @intent_id
