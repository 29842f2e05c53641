-- One payment for a finding's console page.
SELECT id, order_id, coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at,
       coalesce(observed_external_status, ''), last_reconciled_at
  FROM payments
 WHERE id = @payment_id
