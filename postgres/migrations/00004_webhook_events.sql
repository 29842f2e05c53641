-- Stripe webhook events payrecon has processed, one row per event id. The
-- webhook handler inserts the row first, in the same transaction as the
-- transition the event causes, so a redelivery of the same event (Stripe
-- delivers at least once, sometimes concurrently) finds the row and does
-- nothing. outcome says what the event did: the canonical writer's outcome
-- (applied, already_in_target, moved_elsewhere, payment_missing) or
-- 'ignored' for event types payrecon records without acting on.

-- +goose Up
CREATE TABLE IF NOT EXISTS stripe_webhook_events (
    event_id          text        PRIMARY KEY,
    event_type        text        NOT NULL,
    api_version       text,
    payment_intent_id text,
    payment_id        bigint,
    stripe_created_at timestamptz,
    received_at       timestamptz NOT NULL,
    outcome           text        NOT NULL
);
-- The events of one PaymentIntent (findings show, investigations).
CREATE INDEX IF NOT EXISTS stripe_webhook_events_intent
    ON stripe_webhook_events (payment_intent_id) WHERE payment_intent_id IS NOT NULL;
-- Pruning by age: Stripe retries a delivery for up to three days, so rows
-- must outlive that; older ones may be deleted by received_at.
CREATE INDEX IF NOT EXISTS stripe_webhook_events_received
    ON stripe_webhook_events (received_at);

-- +goose Down
DROP TABLE IF EXISTS stripe_webhook_events;
