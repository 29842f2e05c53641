-- One payment as the sweep reads it (a one-off recheck).
--   @id
SELECT id, coalesce(stripe_payment_intent_id::text, ''), status, version, created_at, updated_at
  FROM payments
 WHERE id = @id
