-- Rows ahead of the job's cursor: what the current cycle has left to do
-- (the progress bar of `scan --once`); an account's store counts only its
-- account's rows.
--   @job (and @account, for an account's store)
SELECT count(*)
  FROM payments p
 WHERE p.id > coalesce((SELECT last_id FROM reconciliation_cursor WHERE job = @job), 0)
   AND true /*account:p*/
