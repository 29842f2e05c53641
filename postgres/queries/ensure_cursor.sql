-- Create the job's cursor on first use.
INSERT INTO reconciliation_cursor (job, cycle_started_at)
VALUES ($1, $2)
ON CONFLICT (job) DO NOTHING
