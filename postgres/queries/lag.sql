-- Reconciliation lag: the age of the row least recently verified. Answered
-- from the payments_reconciled_order expression index: one index entry, not
-- a table scan.
SELECT coalesce(last_reconciled_at, created_at)
  FROM payments
 ORDER BY coalesce(last_reconciled_at, created_at)
 LIMIT 1
