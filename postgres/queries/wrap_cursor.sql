-- End of the table: the cycle is complete. Back to the start, with the same
-- compare-and-set as an advance.
--   @job, @from (where the cursor is), @now
UPDATE reconciliation_cursor
   SET last_id = 0,
       last_cycle_completed_at = @now,
       last_cycle_started_at = cycle_started_at,
       last_cycle_rows = cycle_rows,
       last_cycle_busy_seconds = cycle_busy_seconds,
       cycle_started_at = @now,
       cycle_rows = 0,
       cycle_busy_seconds = 0,
       advanced_at = @now
 WHERE job = @job AND last_id = @from
