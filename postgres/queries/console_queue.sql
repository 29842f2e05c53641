-- A River job kind's backlog (waiting, running or retrying), the creation
-- time of its oldest waiting job, and its dead letters.
SELECT count(*) FILTER (WHERE state = ANY (@waiting_states::river_job_state[])),
       min(created_at) FILTER (WHERE state = ANY (@waiting_states::river_job_state[])),
       count(*) FILTER (WHERE state = ANY (@dead_states::river_job_state[]))
  FROM river_job
 WHERE kind = @kind
