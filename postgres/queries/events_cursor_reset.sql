-- Restart the events cursor from a time: its event is older than Stripe
-- keeps, or Stripe refused it. Records the reset and, when events were
-- lost, their time range. A compare-and-set on event_id like the advance.
--   @job, @from (the cursor's event id, NULL for none), @start_from,
--   @lost_from and @lost_to (NULL when nothing was lost), @reason, @now
UPDATE stripe_events_cursor
   SET event_id = NULL,
       event_created = NULL,
       start_from = @start_from,
       resets = resets + 1,
       losses = losses + CASE WHEN @lost_from::timestamptz IS NULL THEN 0 ELSE 1 END,
       reset_at = @now,
       reset_reason = @reason,
       lost_from = coalesce(@lost_from::timestamptz, lost_from),
       lost_to = coalesce(@lost_to::timestamptz, lost_to)
 WHERE job = @job AND event_id IS NOT DISTINCT FROM @from::text
