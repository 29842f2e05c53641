-- Every account payments has rows of, in order, with "" for the platform's
-- own (the column NULL or empty): a loose index scan on payments_account_id,
-- one probe per account however many rows each has. The account
-- expression replaces the markers (postgres.AccountColumn).
WITH RECURSIVE a(account) AS (
    SELECT min(''::text /*account_of:p*/) FROM payments p
     UNION ALL
    SELECT (SELECT min(''::text /*account_of:p*/) FROM payments p WHERE ''::text /*account_of:p*/ > a.account)
      FROM a
     WHERE a.account IS NOT NULL
)
SELECT account FROM a WHERE account IS NOT NULL
