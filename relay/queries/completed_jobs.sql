-- Completed jobs of payrecon's kinds finalized before @before, oldest
-- first, at most @limit (river_job_state_and_finalized_at_index): the
-- batch `prune --once` hands to River's JobDeleteMany.
--   @kinds, @before, @limit
SELECT id
  FROM river_job
 WHERE state = 'completed' AND finalized_at < @before AND kind = ANY (@kinds::text[])
 ORDER BY finalized_at
 LIMIT @limit
