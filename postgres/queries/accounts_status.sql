-- Each account's sweep job (Connect: @base for the platform's own rows,
-- @base/acct_… for a connected account's) with the time since which its
-- rows are all verified: its last completed cycle's start (or, before any
-- completed, the current cycle's), or earlier when a row of it waits in
-- its recheck queue; and its last completed cycle. Oldest first.
--   @base, @prefix (@base || '/acct_', LIKE-escaped)
SELECT c.job,
       least(coalesce(c.last_cycle_started_at, c.cycle_started_at),
             (SELECT min(r.verified_before) FROM reconciliation_recheck r WHERE r.job = c.job)) AS verified_since,
       c.last_cycle_completed_at
  FROM reconciliation_cursor c
 WHERE c.job = @base OR c.job LIKE @prefix || '%'
 ORDER BY 2, 1
