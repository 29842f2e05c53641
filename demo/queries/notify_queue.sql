-- Notifications still to deliver: jobs of @kind that may still run.
SELECT count(*)::int FROM river_job
 WHERE kind = @kind AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')
