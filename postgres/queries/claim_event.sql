-- Claim a Stripe event id: the first delivery inserts the row (with outcome
-- 'received' until the transaction records the real one); a redelivery,
-- even a concurrent one, waits for the first transaction and then inserts
-- nothing, so it returns no row.
--   @event_id, @event_type, @api_version, @intent_id (or NULL),
--   @created (Stripe's created time, or NULL), @now (received at)
INSERT INTO stripe_webhook_events
       (event_id, event_type, api_version, payment_intent_id, stripe_created_at, received_at, outcome)
VALUES (@event_id, @event_type, @api_version, @intent_id, @created, @now, 'received')
    ON CONFLICT (event_id) DO NOTHING
RETURNING event_id
