-- A payment's transitions, oldest first (the audit trail: payments show,
-- findings show).
--   @payment_id, @limit
SELECT id, payment_id, from_status, to_status, version, source, coalesce(source_ref, ''), occurred_at
  FROM payment_transitions
 WHERE payment_id = @payment_id
 ORDER BY version, id
 LIMIT @limit
