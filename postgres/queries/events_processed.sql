-- Which of these Stripe events payrecon has processed (claimed by the
-- webhook or the catch-up: stripe_webhook_events, migration 00004).
--   @ids
SELECT event_id FROM stripe_webhook_events WHERE event_id = ANY(@ids::text[])
