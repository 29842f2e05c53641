-- The finding a repair job's command was queued with (0 when none).
SELECT coalesce((SELECT (o.payload->>'finding_id')::bigint
                   FROM river_job j
                   JOIN outbox o ON o.id = (j.args->>'outbox_id')::bigint
                  WHERE j.id = @job_id AND o.payload ? 'finding_id'), 0)
