-- What is left for a drain in the repairs queue: whether any job is
-- available, running, or retryable/scheduled within the horizon, and how
-- many are scheduled after it. Answered from River's fetching index
-- (state, queue, priority, scheduled_at, id).
--   @kind (job kind), @queue, @horizon (interval)
SELECT EXISTS (SELECT 1 FROM river_job
                WHERE state IN ('available', 'running') AND queue = @queue AND kind = @kind)
    OR EXISTS (SELECT 1 FROM river_job
                WHERE state IN ('retryable', 'scheduled') AND queue = @queue AND kind = @kind
                  AND scheduled_at <= now() + @horizon::interval) AS busy,
       (SELECT count(*) FROM river_job
         WHERE state IN ('retryable', 'scheduled') AND queue = @queue AND kind = @kind
           AND scheduled_at > now() + @horizon::interval)::int AS later
