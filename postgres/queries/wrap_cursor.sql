-- End of the table: the cycle is complete. Back to the start, with the same
-- compare-and-set as an advance.
UPDATE reconciliation_cursor
   SET last_id = 0,
       last_cycle_completed_at = $3,
       last_cycle_started_at = cycle_started_at,
       last_cycle_rows = cycle_rows,
       last_cycle_busy_seconds = cycle_busy_seconds,
       cycle_started_at = $3,
       cycle_rows = 0,
       cycle_busy_seconds = 0,
       advanced_at = $3
 WHERE job = $1 AND last_id = $2
