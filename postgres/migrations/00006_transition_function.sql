-- The canonical writer's one transition, as a function both roads call: the
-- webhook's statement (queries/transition.sql) and the repair's
-- (queries/apply_repair.sql). It locks the payment, moves it to the target
-- only from an allowed status, and says what happened. version and
-- updated_at advance exactly once per real transition. FOR UPDATE under
-- READ COMMITTED waits for a concurrent writer and then sees its committed
-- status, so of many racing callers exactly one applies and the rest see the
-- target state.
--
-- The transition table itself (which command goes from where to where) is
-- the domain's (payrecon.Transitions): callers pass the target and the
-- allowed source statuses. The outcome values are those of payrecon.Outcome
-- (applied, already_in_target, moved_elsewhere, payment_missing); a test
-- sends every command and starting status through every road and compares.
--
-- Arguments: the payment by id, or (id NULL) by PaymentIntent id; the target
-- status; the statuses it may move from; the time written to updated_at.

-- +goose Up
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

-- +goose Down
DROP FUNCTION IF EXISTS payrecon_transition(bigint, text, text, text[], timestamptz);
