-- Payments by id, PaymentIntent id or order id: three branches so that each
-- uses its own index (order_id's is the application's, if it has one). A
-- session row's PaymentIntent id is NULL: read as ''.
SELECT id, order_id, coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at,
       coalesce(observed_external_status, ''), last_reconciled_at
  FROM payments WHERE id = @id::bigint
UNION
SELECT id, order_id, coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at,
       coalesce(observed_external_status, ''), last_reconciled_at
  FROM payments WHERE stripe_payment_intent_id = @q
UNION
SELECT id, order_id, coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at,
       coalesce(observed_external_status, ''), last_reconciled_at
  FROM payments WHERE order_id = @q
 ORDER BY id
 LIMIT 20
