-- The state and attempt of the River job a batch runs as, its row locked
-- until the batch's transaction ends (postgres.JobFence): River's rescuer,
-- and a worker taking the job over, wait for a commit in progress.
--   @id
SELECT state::text, attempt FROM river_job WHERE id = @id FOR UPDATE
