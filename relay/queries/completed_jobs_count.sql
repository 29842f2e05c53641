-- How many completed jobs of payrecon's kinds were finalized before
-- @before: what `prune --once --dry-run` says would go.
--   @kinds, @before
SELECT count(*)
  FROM river_job
 WHERE state = 'completed' AND finalized_at < @before AND kind = ANY (@kinds::text[])
