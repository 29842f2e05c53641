-- Record what the event did, in the transaction that did it.
-- $1 event id, $2 outcome, $3 payment id (or NULL).
UPDATE stripe_webhook_events
   SET outcome = $2, payment_id = $3
 WHERE event_id = $1
