-- A repair command from the outbox, applied in one statement (one round
-- trip: the relay's hot path). Locks the outbox row and its finding,
-- validates the payload, moves the payment through the canonical writer's
-- one transition (payrecon_transition, migration 00017, the same function
-- the webhook's statement calls, which records the transition in
-- payment_transitions with source @source and the outbox id as its ref),
-- resolves the finding only if the payment
-- is in the command's target state afterwards (else notes why on it), and
-- applies nothing to a payment that no longer records the PaymentIntent the
-- command was judged for (payload stripe_payment_intent_id: the application
-- re-pointed the row; outcome intent_mismatch, the finding left open with
-- the reason), and
-- marks the outbox row processed with the outcome; all of it commits or
-- rolls back with the caller's transaction (and River's job completion).
--   @outbox_id                   the command
--   @commands, @targets, @froms  the transition table (payrecon.Transitions):
--                                commands, targets, allowed sources
--                                (comma-separated)
--   @now                         the time written
--   @source                      the transitions' source ('repair')
--   @resolved_by                 who resolves the finding ('outbox:<id>')
--   @repaired, @already          the resolutions of a finding whose payment
--                                the command moved / found in the target
-- Returns one row when the outbox row exists; the diagnostic columns say
-- why nothing was applied.
WITH cmd AS (
    SELECT o.id, o.event_type, o.processed_at, t.target, string_to_array(t.froms, ',') AS froms,
           CASE WHEN jsonb_typeof(o.payload) <> 'object' THEN 'payload is not a JSON object'
                WHEN NOT coalesce(o.payload->>'payment_id' ~ '^[0-9]{1,18}$', false) THEN 'payload has no valid payment_id'
                WHEN o.payload ? 'finding_id' AND NOT coalesce(o.payload->>'finding_id' ~ '^[0-9]{1,18}$', false)
                     THEN 'payload has an invalid finding_id'
           END AS payload_error,
           CASE WHEN o.payload->>'payment_id' ~ '^[0-9]{1,18}$' THEN (o.payload->>'payment_id')::bigint END AS payment_id,
           CASE WHEN o.payload->>'finding_id' ~ '^[0-9]{1,18}$' THEN (o.payload->>'finding_id')::bigint END AS finding_id,
           nullif(o.payload->>'stripe_payment_intent_id', '') AS intent_id
      FROM outbox o
      LEFT JOIN unnest(@commands::text[], @targets::text[], @froms::text[]) AS t(command, target, froms)
             ON t.command = o.event_type
     WHERE o.id = @outbox_id
       FOR UPDATE OF o
),
fnd AS (
    SELECT f.id, f.resolved_at
      FROM reconciliation_findings f JOIN cmd ON f.id = cmd.finding_id
       FOR UPDATE OF f
),
todo AS (
    SELECT cmd.*
      FROM cmd
     WHERE cmd.processed_at IS NULL AND cmd.target IS NOT NULL AND cmd.payload_error IS NULL
       AND (cmd.finding_id IS NULL OR EXISTS (SELECT 1 FROM fnd WHERE fnd.resolved_at IS NULL))
),
applied AS (
    SELECT todo.id AS outbox_id, todo.finding_id, todo.target, todo.intent_id, t.*,
           coalesce(t.out_after, t.out_before) IS NOT DISTINCT FROM todo.target
               AND t.out_outcome <> 'intent_mismatch' AS in_target
      FROM todo
     CROSS JOIN LATERAL payrecon_transition(todo.payment_id, todo.intent_id, todo.target, todo.froms, @now::timestamptz, @source::text, todo.id::text) t
),
described AS (
    SELECT a.*,
           CASE WHEN a.in_target THEN a.out_outcome
                WHEN a.out_outcome = 'intent_mismatch'
                THEN a.out_outcome || ': the payment no longer records ' || a.intent_id
                     || ' (the application pointed it at another PaymentIntent); nothing applied'
                ELSE a.out_outcome || ': payment is ' || coalesce(a.out_before, '(missing)') || ', not ' || a.target
           END AS outcome_text
      FROM applied a
),
resolved AS (
    UPDATE reconciliation_findings f
       SET resolved_at = @now,
           resolution = CASE WHEN d.out_after IS NOT NULL THEN @repaired ELSE @already END,
           resolved_by = @resolved_by,
           repair_outcome = d.outcome_text
      FROM described d
     WHERE f.id = d.finding_id AND f.resolved_at IS NULL AND d.in_target
    RETURNING f.id
),
noted AS (
    UPDATE reconciliation_findings f
       SET repair_outcome = d.outcome_text
      FROM described d
     WHERE f.id = d.finding_id AND f.resolved_at IS NULL AND NOT d.in_target
    RETURNING f.id
),
marked AS (
    UPDATE outbox o
       SET processed_at = @now,
           outcome = coalesce((SELECT outcome_text FROM described), 'skipped: finding already resolved'),
           last_error = NULL
      FROM cmd
     WHERE o.id = cmd.id
       AND cmd.processed_at IS NULL AND cmd.target IS NOT NULL AND cmd.payload_error IS NULL
       AND (cmd.finding_id IS NULL OR EXISTS (SELECT 1 FROM fnd))
    RETURNING o.outcome
)
SELECT cmd.event_type,
       cmd.processed_at IS NOT NULL                                  AS already_processed,
       cmd.target IS NULL                                            AS unknown_command,
       cmd.payload_error,
       cmd.finding_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fnd) AS finding_missing,
       cmd.finding_id,
       (SELECT out_payment_id FROM described),
       (SELECT out_outcome FROM described),
       (SELECT out_before FROM described),
       (SELECT out_after FROM described),
       (SELECT out_version FROM described),
       (SELECT out_transition_id FROM described),
       EXISTS (SELECT 1 FROM resolved)                               AS resolved,
       (SELECT outcome FROM marked)                                  AS recorded
  FROM cmd
