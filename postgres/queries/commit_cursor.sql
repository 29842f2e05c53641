-- Advance the cursor only if no other run moved it since the batch was read
-- (ConcurrentRun otherwise). Also accumulates the cycle's measured progress.
UPDATE reconciliation_cursor
   SET last_id = $3,
       cycle_rows = cycle_rows + $4,
       cycle_busy_seconds = cycle_busy_seconds + $5,
       advanced_at = $6
 WHERE job = $1 AND last_id = $2
