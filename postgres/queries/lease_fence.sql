-- Fencing, inside a batch's transaction: the lease's epoch now, its row
-- locked FOR SHARE until the transaction ends, so a takeover (which updates
-- the row) waits for this commit, and a commit after a takeover sees the
-- new epoch and writes nothing.
--   @job
SELECT epoch FROM payrecon_leases WHERE job = @job AND NOT released FOR SHARE
