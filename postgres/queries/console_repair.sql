-- A finding's repair command (the outbox row queued with it) and its
-- latest River delivery job.
SELECT o.id, o.event_type, o.created_at, o.processed_at, coalesce(o.outcome, ''), coalesce(o.last_error, ''),
       coalesce(j.id, 0), coalesce(j.state::text, ''), coalesce(j.attempt, 0), coalesce(j.max_attempts, 0)
  FROM outbox o
  LEFT JOIN LATERAL (
        SELECT id, state, attempt, max_attempts
          FROM river_job
         WHERE kind = @repair_kind AND args @> jsonb_build_object('outbox_id', o.id)
         ORDER BY id DESC
         LIMIT 1) j ON true
 WHERE o.payload ? 'finding_id' AND o.payload->>'finding_id' = @finding_id::bigint::text
 ORDER BY o.id
 LIMIT 1
