-- Rows ahead of the job's cursor: what the current cycle has left to do
-- (the progress bar of `scan --once`).
--   @job
SELECT count(*)
  FROM payments
 WHERE id > coalesce((SELECT last_id FROM reconciliation_cursor WHERE job = @job), 0)
