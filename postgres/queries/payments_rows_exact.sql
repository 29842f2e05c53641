-- The exact size of payments: a scan of the table (`status` only).
SELECT count(*) FROM payments
