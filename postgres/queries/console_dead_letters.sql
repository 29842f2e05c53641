-- The latest repair dead letters, with their outbox command and finding.
SELECT j.id, coalesce((j.args->>'outbox_id')::bigint, 0), coalesce(o.event_type, ''),
       coalesce((o.payload->>'finding_id')::bigint, 0), j.state::text, j.attempt,
       coalesce(j.errors[array_length(j.errors, 1)]->>'error', o.last_error, ''), coalesce(j.finalized_at, j.created_at)
  FROM river_job j
  LEFT JOIN outbox o ON o.id = (j.args->>'outbox_id')::bigint
 WHERE j.kind = @repair_kind AND j.state = ANY (@dead_states::river_job_state[])
 ORDER BY j.finalized_at DESC NULLS LAST, j.id DESC
 LIMIT @limit::int
