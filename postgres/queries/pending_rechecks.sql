-- The job's queued rechecks, by reason.
--   @job
SELECT reason, count(*)::int
  FROM reconciliation_recheck
 WHERE job = @job
 GROUP BY reason
