-- A River job kind's backlog (waiting, running or retrying), the creation
-- time of its oldest waiting job (NULL when none), and its dead letters
-- (discarded or cancelled): the notifications' queue in `status` and the
-- metrics.
--   @kind
SELECT count(*) FILTER (WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled')),
       min(created_at) FILTER (WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled')),
       count(*) FILTER (WHERE state IN ('discarded', 'cancelled'))
  FROM river_job
 WHERE kind = @kind
