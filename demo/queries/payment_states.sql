-- Every payment's state, to compare before and after.
SELECT id, status, version, updated_at FROM payments
