-- When the job's earliest recheck of @reason (any reason when '') is due;
-- NULL when none is queued.
--   @job, @reason
SELECT min(due_at)
  FROM reconciliation_recheck
 WHERE job = @job AND (@reason = '' OR reason = @reason)
