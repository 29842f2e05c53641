-- Rows whose early recheck is due.
--   @job, @now, @limit
SELECT p.id, p.stripe_payment_intent_id, p.status, p.version, p.created_at, p.updated_at, r.attempts
  FROM reconciliation_recheck r
  JOIN payments p ON p.id = r.payment_id
 WHERE r.job = @job AND r.due_at <= @now
 ORDER BY r.due_at
 LIMIT @limit
