-- Timeline source "transition": the payment's status changes
-- (payment_transitions), with their road and reference, and their
-- notifications to the application, delivered or given up. @notify_kind is relay.NotifyKind.
WITH t AS (
    SELECT id, from_status, to_status, version, source, source_ref, occurred_at
      FROM payment_transitions
     WHERE payment_id = @payment_id::bigint
     ORDER BY version
     LIMIT 200),
j AS (
    SELECT t.id AS transition_id, rj.id, rj.state, rj.attempt, rj.errors, rj.finalized_at
      FROM t JOIN river_job rj ON rj.kind = @notify_kind::text AND rj.args @> jsonb_build_object('transition_id', t.id))
SELECT occurred_at, 'Status ' || from_status || ' → ' || to_status || ' (version ' || version || ')',
       'by ' || source || coalesce(' ' || source_ref, '') || '; transition ' || id
  FROM t
UNION ALL
SELECT finalized_at, 'Notification to the application delivered', 'transition ' || transition_id || ', attempt ' || attempt
  FROM j WHERE state = 'completed' AND finalized_at IS NOT NULL
UNION ALL
SELECT finalized_at, 'Notification dead-lettered (' || state || ') after ' || attempt || ' attempts',
       'River job ' || id || '; retry it with payrecon relay --retry ' || id
  FROM j WHERE state = ANY (@dead_states::river_job_state[]) AND finalized_at IS NOT NULL
