-- One account's rows, and those created since @since, as account_volumes.sql
-- counts every account's: its walk of the account index
-- (payments_account_id), not a scan of payments. The account expression
-- replaces the marker (postgres.AccountColumn).
--   @account ('' the platform's own), @since
SELECT count(*), count(*) FILTER (WHERE p.created_at >= @since)
  FROM payments p
 WHERE true /*account:p*/
