-- At the wrap, the job's ranges past the end of its cycle (rows deleted
-- since the previous cycle passed them) go: every row is now covered by
-- the cycle that just completed.
--   @job, @from (where the cursor ended)
DELETE FROM reconciliation_verified_ranges
 WHERE job = @job AND lower(ids) > @from::bigint
