-- A repair command, applied in one statement (one round trip): the relay's
-- hot path. It locks the outbox row and the finding it names, applies the
-- command's transition with the same conditional UPDATE as
-- apply_transition.sql, resolves the finding only if the payment is in the
-- target state afterwards (else notes why on it), and marks the outbox row
-- processed with the outcome; all of it commits or rolls back with the
-- caller's transaction (and River's job completion).
--   $1 outbox id
--   $2, $3, $4 the transition table: commands, targets, allowed sources
--              (comma-separated), from payrecon.Transitions
--   $5 now      $6 resolved_by
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
           CASE WHEN o.payload->>'finding_id' ~ '^[0-9]{1,18}$' THEN (o.payload->>'finding_id')::bigint END AS finding_id
      FROM outbox o
      LEFT JOIN unnest($2::text[], $3::text[], $4::text[]) AS t(command, target, froms) ON t.command = o.event_type
     WHERE o.id = $1
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
cur AS (
    SELECT p.id, p.status FROM payments p JOIN todo ON p.id = todo.payment_id FOR UPDATE OF p
),
upd AS (
    UPDATE payments p
       SET status = todo.target, version = p.version + 1, updated_at = $5
      FROM todo, cur
     WHERE p.id = cur.id AND cur.status = ANY(todo.froms)
    RETURNING p.id, p.status, p.version
),
res AS (
    SELECT todo.id AS outbox_id, todo.finding_id, todo.target, cur.id AS payment_id, cur.status AS before,
           upd.status AS applied_status, upd.version,
           CASE WHEN upd.id IS NOT NULL THEN 'applied'
                WHEN cur.id IS NULL THEN 'payment_missing'
                WHEN cur.status = todo.target THEN 'already_in_target'
                ELSE 'moved_elsewhere' END AS outcome
      FROM todo LEFT JOIN cur ON true LEFT JOIN upd ON true
),
described AS (
    SELECT res.*,
           CASE WHEN res.outcome IN ('applied', 'already_in_target') THEN res.outcome
                ELSE res.outcome || ': payment is ' || coalesce(res.before, '(missing)') || ', not ' || res.target
           END AS outcome_text
      FROM res
),
resolved AS (
    UPDATE reconciliation_findings f
       SET resolved_at = $5,
           resolution = CASE d.outcome WHEN 'applied' THEN 'repaired' ELSE 'already_in_target' END,
           resolved_by = $6 || d.outbox_id,
           repair_outcome = d.outcome_text
      FROM described d
     WHERE f.id = d.finding_id AND f.resolved_at IS NULL AND d.outcome IN ('applied', 'already_in_target')
    RETURNING f.id
),
noted AS (
    UPDATE reconciliation_findings f
       SET repair_outcome = d.outcome_text
      FROM described d
     WHERE f.id = d.finding_id AND f.resolved_at IS NULL AND d.outcome IN ('moved_elsewhere', 'payment_missing')
    RETURNING f.id
),
marked AS (
    UPDATE outbox o
       SET processed_at = $5,
           outcome = coalesce((SELECT outcome_text FROM described), 'skipped: finding already resolved'),
           last_error = NULL
      FROM cmd
     WHERE o.id = cmd.id
       AND cmd.processed_at IS NULL AND cmd.target IS NOT NULL AND cmd.payload_error IS NULL
       AND (cmd.finding_id IS NULL OR EXISTS (SELECT 1 FROM fnd))
    RETURNING o.outcome
)
SELECT cmd.event_type,
       cmd.processed_at IS NOT NULL                              AS already_processed,
       cmd.target IS NULL                                        AS unknown_command,
       cmd.payload_error,
       cmd.finding_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM fnd) AS finding_missing,
       cmd.finding_id,
       (SELECT payment_id FROM described),
       (SELECT outcome FROM described),
       (SELECT before FROM described),
       (SELECT applied_status FROM described),
       (SELECT version FROM described),
       EXISTS (SELECT 1 FROM resolved)                           AS resolved,
       (SELECT outcome FROM marked)                              AS recorded
  FROM cmd
