-- Every events catch-up cursor, for status and the metrics.
SELECT job, event_id, event_created, start_from, checked_at, advanced_at, outcomes,
       last_applied_at, last_delay_seconds, resets, losses, reset_at, reset_reason, lost_from, lost_to
  FROM stripe_events_cursor
 ORDER BY job
