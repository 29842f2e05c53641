-- Whether the account index payments_account_id exists in payments' schema,
-- and whether it is valid (an interrupted CONCURRENTLY build leaves it
-- INVALID); NULL when it does not exist.
SELECT (SELECT i.indisvalid
          FROM pg_index i
          JOIN pg_class c ON c.oid = i.indexrelid
         WHERE i.indrelid = to_regclass('payments') AND c.relname = 'payments_account_id')
