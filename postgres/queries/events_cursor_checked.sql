-- A round reached the newest event with the cursor at @event_id (NULL for
-- none): every event created before @now has been processed. A
-- compare-and-set like the advance.
--   @job, @event_id, @now
UPDATE stripe_events_cursor
   SET checked_at = @now
 WHERE job = @job AND event_id IS NOT DISTINCT FROM @event_id::text
