-- `demo --accounts`: the accounts' sweep jobs (@base for the platform's own
-- rows, @base/acct_… for each connected account's): how many completed a
-- cycle, and the rows swept so far (a completed job's last cycle, the
-- others' current one).
--   @base, @prefix (@base || '/acct_', LIKE-escaped)
SELECT count(*) FILTER (WHERE last_cycle_completed_at IS NOT NULL),
       coalesce(sum(CASE WHEN last_cycle_completed_at IS NOT NULL THEN last_cycle_rows ELSE cycle_rows END), 0)
  FROM reconciliation_cursor
 WHERE job = @base OR job LIKE @prefix || '%'
