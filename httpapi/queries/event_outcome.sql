-- What an already processed event did, for the answer to a redelivery.
-- $1 event id.
SELECT outcome FROM stripe_webhook_events WHERE event_id = $1
