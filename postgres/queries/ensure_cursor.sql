-- Create the job's cursor on first use.
--   @job, @now
INSERT INTO reconciliation_cursor (job, cycle_started_at)
VALUES (@job, @now)
ON CONFLICT (job) DO NOTHING
