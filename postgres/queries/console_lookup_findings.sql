-- The findings of the payments a lookup found, and of a PaymentIntent
-- with no local row, newest first.
SELECT f.id, f.payment_id, coalesce(f.stripe_payment_intent_id, p.stripe_payment_intent_id, ''), coalesce(p.order_id, ''),
       f.kind, f.verdict, f.local_status, coalesce(f.external_status, ''), f.reason, coalesce(f.repair_command, ''),
       coalesce(f.repair_outcome, ''), coalesce(f.job, ''), f.detected_at, f.resolved_at, f.resolution,
       coalesce(f.resolved_by, ''), coalesce(f.resolution_note, ''), f.details
  FROM reconciliation_findings f
  LEFT JOIN payments p ON p.id = f.payment_id
 WHERE f.payment_id = ANY (@payment_ids::bigint[])
    OR (f.payment_id IS NULL AND f.stripe_payment_intent_id = @q)
 ORDER BY f.detected_at DESC, f.id DESC
 LIMIT 500
