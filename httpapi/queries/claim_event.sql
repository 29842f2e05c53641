-- Claim a Stripe event id: the first delivery inserts the row (with outcome
-- 'received' until the transaction records the real one); a redelivery,
-- even a concurrent one, waits for the first transaction and then inserts
-- nothing, so it returns no row.
-- $1 event id, $2 type, $3 API version, $4 PaymentIntent id (or NULL),
-- $5 Stripe's created time, $6 received at.
INSERT INTO stripe_webhook_events
       (event_id, event_type, api_version, payment_intent_id, stripe_created_at, received_at, outcome)
VALUES ($1, $2, $3, $4, $5, $6, 'received')
    ON CONFLICT (event_id) DO NOTHING
RETURNING event_id
