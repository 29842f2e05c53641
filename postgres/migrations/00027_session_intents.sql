-- Checkout Sessions (issue 17): the PaymentIntent of each session row's
-- Checkout Session, as payrecon saw it (the sweep reading the session, or a
-- checkout.session.* event). A session row records only its session
-- (--session-column), so without this its session's intent would look like
-- a PaymentIntent with no local row (missing_locally) to list mode and to a
-- payment_intent.* event about it: open_missing_locally.sql skips the
-- intents kept here. One row per intent; a session row's check rewrites
-- it.

-- +goose Up
CREATE TABLE IF NOT EXISTS payrecon_session_intents (
    intent_id  text        PRIMARY KEY,
    payment_id bigint      NOT NULL,
    session_id text        NOT NULL,
    seen_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS payrecon_session_intents;
