-- Timeline source "repair": the finding's repair commands (outbox rows),
-- their failed attempts, their dead-lettering and their application.
WITH o AS (
    SELECT id, event_type, created_at, processed_at, outcome, last_error
      FROM outbox
     WHERE payload ? 'finding_id' AND payload->>'finding_id' = @finding_id::bigint::text),
j AS (
    SELECT o.id AS outbox_id, rj.id, rj.state, rj.attempt, rj.errors, rj.finalized_at
      FROM o JOIN river_job rj ON rj.kind = @repair_kind AND rj.args @> jsonb_build_object('outbox_id', o.id))
SELECT created_at, 'Repair queued: ' || event_type, 'outbox ' || id FROM o
UNION ALL
SELECT processed_at, 'Repair applied: ' || coalesce(outcome, ''), 'outbox ' || id FROM o WHERE processed_at IS NOT NULL
UNION ALL
SELECT (e->>'at')::timestamptz, 'Repair attempt ' || (e->>'attempt') || ' failed', e->>'error'
  FROM j, unnest(j.errors) e
UNION ALL
SELECT finalized_at, 'Repair dead-lettered (' || state || ') after ' || attempt || ' attempts', 'River job ' || id || '; retry it from this page'
  FROM j
 WHERE state = ANY (@dead_states::river_job_state[]) AND finalized_at IS NOT NULL
