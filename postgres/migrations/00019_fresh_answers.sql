-- A stale Stripe answer never closes a fresh finding (issue 23).
--
-- 1. reconciliation_findings.recorded_at: when the finding was written, on
--    the database's clock (clock_timestamp() at the insert, whichever
--    process inserted it). A check resolves an open finding only when its
--    Stripe answer was read after the finding was recorded: each check
--    carries the database's time taken before Stripe was asked (the batch's
--    read, or for a listed intent the read of the batch that listed it),
--    and payments.last_reconciled_at now holds that time too, so an older
--    answer never overwrites a newer one. detected_at stays the time the
--    detecting process reported (its clock, which tests may stub); the two
--    differ only by clock skew. Rows found before this migration have NULL:
--    recorded before any answer compared with them.
--
-- 2. payrecon_transition checks the PaymentIntent when it is given with
--    the payment id: a repair judged for pi_old is not applied to a row the
--    application has since pointed at pi_new (outcome intent_mismatch,
--    nothing changed). The webhook's road names the payment by its intent
--    only, as before; the 5-argument wrapper of 00017 stays.
--
-- 3. payrecon_notifications: the database's record that notifications are
--    configured (a process started with --notify-url writes it). From then
--    on every process that makes a transition inserts its notification job,
--    whether or not it was itself given --notify-url (events --once, relay
--    --drain, a run without it), and the processes that have the URL
--    deliver it.

-- +goose Up
ALTER TABLE reconciliation_findings ADD COLUMN IF NOT EXISTS recorded_at timestamptz;
-- A default for new rows only: existing rows keep NULL (no table rewrite).
ALTER TABLE reconciliation_findings ALTER COLUMN recorded_at SET DEFAULT clock_timestamp();

CREATE TABLE IF NOT EXISTS payrecon_notifications (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    enabled_at  timestamptz NOT NULL,
    enabled_by  text        NOT NULL,
    seen_at     timestamptz NOT NULL
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payrecon_transition(
    p_payment_id bigint, p_intent_id text, p_target text, p_from text[], p_now timestamptz,
    p_source text, p_source_ref text,
    OUT out_payment_id bigint, OUT out_before text, OUT out_after text, OUT out_version bigint,
    OUT out_outcome text, OUT out_transition_id bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_intent text;
BEGIN
    IF p_payment_id IS NOT NULL THEN
        SELECT p.id, p.status, p.stripe_payment_intent_id INTO out_payment_id, out_before, v_intent
          FROM payments p WHERE p.id = p_payment_id FOR UPDATE;
    ELSE
        SELECT p.id, p.status INTO out_payment_id, out_before
          FROM payments p WHERE p.stripe_payment_intent_id = p_intent_id FOR UPDATE;
    END IF;
    IF out_payment_id IS NULL THEN
        out_outcome := 'payment_missing';
    ELSIF p_payment_id IS NOT NULL AND p_intent_id IS NOT NULL AND coalesce(v_intent, '') <> p_intent_id THEN
        out_outcome := 'intent_mismatch';
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

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION payrecon_transition(
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
DROP TABLE IF EXISTS payrecon_notifications;
ALTER TABLE reconciliation_findings DROP COLUMN IF EXISTS recorded_at;
