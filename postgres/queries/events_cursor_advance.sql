-- Move the events cursor past one processed event, only if no other catcher
-- moved it since it was read (compare-and-set on event_id: no row updated
-- means ConcurrentRun), and count the event's outcome.
--   @job, @from (the cursor's event id, NULL for none), @to and @to_created
--   (the event processed), @outcome, @delay_seconds (detection delay of an
--   event this road recorded first, else NULL), @now
UPDATE stripe_events_cursor
   SET event_id = @to,
       event_created = @to_created,
       advanced_at = @now,
       outcomes = jsonb_set(outcomes, ARRAY[@outcome::text],
                            to_jsonb(coalesce((outcomes ->> @outcome::text)::bigint, 0) + 1)),
       last_applied_at = CASE WHEN @delay_seconds::float8 IS NULL THEN last_applied_at ELSE @now END,
       last_delay_seconds = coalesce(@delay_seconds::float8, last_delay_seconds)
 WHERE job = @job AND event_id IS NOT DISTINCT FROM @from::text
