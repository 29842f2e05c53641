-- What is left for a drain in the repairs queue: whether any job is
-- available, running, or retryable/scheduled within the horizon, and how
-- many are scheduled after it. Answered from River's fetching index
-- (state, queue, priority, scheduled_at, id).
-- $1 job kind, $2 queue, $3 horizon (interval).
SELECT EXISTS (SELECT 1 FROM river_job
                WHERE state IN ('available', 'running') AND queue = $2 AND kind = $1)
    OR EXISTS (SELECT 1 FROM river_job
                WHERE state IN ('retryable', 'scheduled') AND queue = $2 AND kind = $1
                  AND scheduled_at <= now() + $3::interval) AS busy,
       (SELECT count(*) FROM river_job
         WHERE state IN ('retryable', 'scheduled') AND queue = $2 AND kind = $1
           AND scheduled_at > now() + $3::interval)::int AS later
