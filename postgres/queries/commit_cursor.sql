-- Advance the cursor only if no other run moved it since the batch was read
-- (ConcurrentRun otherwise). Also accumulates the cycle's measured progress.
--   @job, @from (where the batch was read), @to (its last row),
--   @rows (rows checked), @busy_seconds (time spent), @now
UPDATE reconciliation_cursor
   SET last_id = @to,
       cycle_rows = cycle_rows + @rows,
       cycle_busy_seconds = cycle_busy_seconds + @busy_seconds,
       advanced_at = @now
 WHERE job = @job AND last_id = @from
