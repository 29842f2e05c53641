-- `demo --accounts`: each account's sweep job, the rows its last completed
-- cycle swept, and whether it completed one.
--   @base, @prefix (@base || '/acct_', LIKE-escaped)
SELECT job, coalesce(last_cycle_rows, 0), last_cycle_completed_at IS NOT NULL
  FROM reconciliation_cursor
 WHERE job = @base OR job LIKE @prefix || '%'
