-- The events catch-up's cursor, created on first use (one statement: the
-- insert's row when it made one, else the existing row).
--   @job, @start_from (where the first walk begins), @now
WITH ins AS (
    INSERT INTO stripe_events_cursor (job, start_from, created_at)
    VALUES (@job, @start_from, @now)
    ON CONFLICT (job) DO NOTHING
    RETURNING event_id, event_created, start_from, checked_at
)
SELECT event_id, event_created, start_from, checked_at FROM ins
UNION ALL
SELECT event_id, event_created, start_from, checked_at FROM stripe_events_cursor WHERE job = @job
LIMIT 1
