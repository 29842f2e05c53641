-- The events catch-up (payrecon events, run --events-interval): its position
-- in Stripe's event stream, one row per catch-up job. Every write is a
-- compare-and-set on event_id, so two catchers can never both move it: the
-- one that loses stops and reads it again (the events themselves are
-- deduplicated by stripe_webhook_events, so an event processed by both is
-- applied once).

-- +goose Up
CREATE TABLE IF NOT EXISTS stripe_events_cursor (
    job                text        PRIMARY KEY,
    -- The newest event processed, in Stripe's order; NULL before the first
    -- one (and after a reset): the next round walks from start_from.
    event_id           text,
    event_created      timestamptz,
    start_from         timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    -- When a round last reached the newest event Stripe listed.
    checked_at         timestamptz,
    advanced_at        timestamptz,
    -- Events processed since the cursor was created, by outcome
    -- (applied, already_in_target, moved_elsewhere, payment_missing,
    -- ignored, duplicate, refused).
    outcomes           jsonb       NOT NULL DEFAULT '{}',
    -- The last event this road recorded first, and its detection delay
    -- (Stripe's created to applied).
    last_applied_at    timestamptz,
    last_delay_seconds double precision,
    -- Restarts from a time because the cursor's event was older than Stripe
    -- keeps (30 days) or Stripe refused it; lost_from..lost_to are the events
    -- that were never caught up (NULL when nothing was lost), left to the sweep.
    resets             bigint      NOT NULL DEFAULT 0,
    losses             bigint      NOT NULL DEFAULT 0,
    reset_at           timestamptz,
    reset_reason       text,
    lost_from          timestamptz,
    lost_to            timestamptz
);

-- +goose Down
DROP TABLE IF EXISTS stripe_events_cursor;
