-- The Stripe events recorded for a PaymentIntent, oldest first
-- (stripe_webhook_events_intent).
--   @intent_id, @limit
SELECT event_id, event_type, received_at, outcome
  FROM stripe_webhook_events
 WHERE payment_intent_id = @intent_id
 ORDER BY received_at, event_id
 LIMIT @limit
