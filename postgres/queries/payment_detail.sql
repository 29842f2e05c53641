-- One payment as `findings show` prints it.
--   @id
SELECT id, coalesce(order_id::text, ''), coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at,
       coalesce(observed_external_status, ''), last_reconciled_at
  FROM payments
 WHERE id = @id
