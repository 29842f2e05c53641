-- The live phase's events as the webhook endpoint's store recorded them:
-- when, and with what outcome (no row: never processed).
--   @event_ids
SELECT event_id, received_at, outcome
  FROM stripe_webhook_events
 WHERE event_id = ANY (@event_ids)
