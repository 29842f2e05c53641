-- The transition a notification tells the application about, with its
-- payment's order and PaymentIntent (NULL when the payment row is gone).
--   @transition_id
SELECT t.id, t.payment_id, p.order_id::text, p.stripe_payment_intent_id, t.from_status, t.to_status,
       t.version, t.source, coalesce(t.source_ref, ''), t.occurred_at
  FROM payment_transitions t
  LEFT JOIN payments p ON p.id = t.payment_id
 WHERE t.id = @transition_id
