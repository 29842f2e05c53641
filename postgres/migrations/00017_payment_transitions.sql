-- The transition log (issue 10): every real transition the canonical writer
-- makes is a row of payment_transitions, written by payrecon_transition
-- itself, in the statement that changes payments.status, so the row and the
-- change commit or roll back together whichever road the command came by.
-- No row for a command that changed nothing (already in target, moved
-- elsewhere, payment missing).
--
--   source      webhook | events | repair | manual (payrecon.TransitionSource)
--   source_ref  the Stripe event id, the outbox command id, or the operator
--
-- The function also fires pg_notify('payrecon_transitions', id) for
-- in-database listeners, in the same transaction (delivered at commit).
-- PostgreSQL serialises the commits of transactions that notified (one
-- global queue lock), which costs a busy writer a lot; an installation with
-- no listener can turn it off with the setting payrecon.transition_notify =
-- off (ALTER DATABASE … SET, or per session). Unset means on.
--
-- payrecon_transition gains two arguments (source and source_ref) and one
-- result (out_transition_id: the row, NULL when nothing changed); the
-- 5-argument version of 00006 stays, now a wrapper recording source
-- 'manual', so a binary older than this migration keeps working during a
-- rolling upgrade.

-- +goose Up
CREATE TABLE payment_transitions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- REFERENCES payments (id) when payments is a table (added below).
    payment_id  bigint      NOT NULL,
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    version     bigint      NOT NULL,
    source      text        NOT NULL CHECK (source IN ('webhook', 'events', 'repair', 'manual')),
    source_ref  text,
    occurred_at timestamptz NOT NULL
);
-- A payment's history, in order (payments show, findings show, the
-- notifications' per-payment order).
CREATE INDEX payment_transitions_payment ON payment_transitions (payment_id, version);

-- +goose StatementBegin
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('payments')) IN ('r', 'p') THEN
        ALTER TABLE payment_transitions
            ADD CONSTRAINT payment_transitions_payment_id_fkey
            FOREIGN KEY (payment_id) REFERENCES payments (id);
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION payrecon_transition(
    p_payment_id bigint, p_intent_id text, p_target text, p_from text[], p_now timestamptz,
    p_source text, p_source_ref text,
    OUT out_payment_id bigint, OUT out_before text, OUT out_after text, OUT out_version bigint,
    OUT out_outcome text, OUT out_transition_id bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_payment_id IS NOT NULL THEN
        SELECT p.id, p.status INTO out_payment_id, out_before
          FROM payments p WHERE p.id = p_payment_id FOR UPDATE;
    ELSE
        SELECT p.id, p.status INTO out_payment_id, out_before
          FROM payments p WHERE p.stripe_payment_intent_id = p_intent_id FOR UPDATE;
    END IF;
    IF out_payment_id IS NULL THEN
        out_outcome := 'payment_missing';
    ELSIF out_before = ANY (p_from) THEN
        UPDATE payments p
           SET status = p_target, version = p.version + 1, updated_at = p_now
         WHERE p.id = out_payment_id
        RETURNING p.status, p.version INTO out_after, out_version;
        INSERT INTO payment_transitions (payment_id, from_status, to_status, version, source, source_ref, occurred_at)
        VALUES (out_payment_id, out_before, out_after, out_version, p_source, p_source_ref, p_now)
        RETURNING id INTO out_transition_id;
        IF coalesce(current_setting('payrecon.transition_notify', true), '') NOT IN ('off', 'false', '0') THEN
            PERFORM pg_notify('payrecon_transitions', out_transition_id::text);
        END IF;
        out_outcome := 'applied';
    ELSIF out_before = p_target THEN
        out_outcome := 'already_in_target';
    ELSE
        out_outcome := 'moved_elsewhere';
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payrecon_transition(
    p_payment_id bigint, p_intent_id text, p_target text, p_from text[], p_now timestamptz,
    OUT out_payment_id bigint, OUT out_before text, OUT out_after text, OUT out_version bigint,
    OUT out_outcome text)
LANGUAGE sql AS $$
    SELECT t.out_payment_id, t.out_before, t.out_after, t.out_version, t.out_outcome
      FROM payrecon_transition(p_payment_id, p_intent_id, p_target, p_from, p_now, 'manual', NULL) t
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS payrecon_transition(bigint, text, text, text[], timestamptz, text, text);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payrecon_transition(
    p_payment_id bigint, p_intent_id text, p_target text, p_from text[], p_now timestamptz,
    OUT out_payment_id bigint, OUT out_before text, OUT out_after text, OUT out_version bigint,
    OUT out_outcome text)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_payment_id IS NOT NULL THEN
        SELECT p.id, p.status INTO out_payment_id, out_before
          FROM payments p WHERE p.id = p_payment_id FOR UPDATE;
    ELSE
        SELECT p.id, p.status INTO out_payment_id, out_before
          FROM payments p WHERE p.stripe_payment_intent_id = p_intent_id FOR UPDATE;
    END IF;
    IF out_payment_id IS NULL THEN
        out_outcome := 'payment_missing';
    ELSIF out_before = ANY (p_from) THEN
        UPDATE payments p
           SET status = p_target, version = p.version + 1, updated_at = p_now
         WHERE p.id = out_payment_id
        RETURNING p.status, p.version INTO out_after, out_version;
        out_outcome := 'applied';
    ELSIF out_before = p_target THEN
        out_outcome := 'already_in_target';
    ELSE
        out_outcome := 'moved_elsewhere';
    END IF;
END
$$;
-- +goose StatementEnd
DROP TABLE IF EXISTS payment_transitions;
