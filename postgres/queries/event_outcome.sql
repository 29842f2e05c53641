-- What an already processed event did, for the answer to a redelivery.
--   @event_id
SELECT outcome FROM stripe_webhook_events WHERE event_id = @event_id
