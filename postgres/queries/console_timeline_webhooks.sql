-- Timeline source "webhook": Stripe events received for the PaymentIntent.
SELECT received_at, event_type, event_id || ' → ' || outcome
  FROM stripe_webhook_events
 WHERE payment_intent_id = @intent_id::text
 ORDER BY received_at
 LIMIT 200
