-- Every job's cycle figures.
SELECT job, last_id, cycle_started_at, last_cycle_completed_at, cycle_rows, cycle_busy_seconds,
       last_cycle_started_at, last_cycle_rows, last_cycle_busy_seconds, advanced_at
  FROM reconciliation_cursor
 ORDER BY job
