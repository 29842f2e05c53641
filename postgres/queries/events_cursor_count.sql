-- Count one processed event's outcome on the job's events cursor without
-- moving it: an event Stripe listed late, found behind the cursor, or one
-- this catcher applied while another moved the cursor past it.
--   @job, @outcome, @delay_seconds (detection delay of an event this road
--   recorded first, else NULL), @now
UPDATE stripe_events_cursor
   SET outcomes = jsonb_set(outcomes, ARRAY[@outcome::text],
                            to_jsonb(coalesce((outcomes ->> @outcome::text)::bigint, 0) + 1)),
       last_applied_at = CASE WHEN @delay_seconds::float8 IS NULL THEN last_applied_at ELSE @now END,
       last_delay_seconds = coalesce(@delay_seconds::float8, last_delay_seconds)
 WHERE job = @job
