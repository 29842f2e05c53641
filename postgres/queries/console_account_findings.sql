-- The console's Accounts pages: the open findings of the given accounts'
-- payments ('' the platform's own: the column NULL or empty), by account
-- and kind, as `findings list --account` selects them. The account
-- expression replaces the markers (postgres.AccountColumn).
--   @accounts
SELECT ''::text /*account_of:p*/ AS account, f.kind, count(*)
  FROM reconciliation_findings f
  JOIN payments p ON p.id = f.payment_id
 WHERE f.resolved_at IS NULL
   AND ''::text /*account_of:p*/ = ANY (@accounts::text[])
 GROUP BY 1, 2
 ORDER BY 1, 3 DESC, 2
