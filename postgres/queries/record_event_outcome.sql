-- Record what the event did, in the transaction that did it.
--   @event_id, @outcome, @payment_id (or NULL)
UPDATE stripe_webhook_events
   SET outcome = @outcome, payment_id = @payment_id
 WHERE event_id = @event_id
