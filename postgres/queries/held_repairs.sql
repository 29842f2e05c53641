-- Repair commands held for review (repair mode review) whose finding is
-- still open, oldest first, with the finding and the payment now: what
-- `repairs list` and the console show for approval. From outbox_held.
--   @limit
SELECT o.id, o.event_type, o.held_at, f.id, f.kind, f.payment_id, f.stripe_payment_intent_id,
       f.local_status, f.external_status, f.reason, f.detected_at, f.job,
       p.order_id::text, p.status::text
  FROM outbox o
  JOIN reconciliation_findings f
    ON f.id = CASE WHEN o.payload->>'finding_id' ~ '^[0-9]{1,18}$' THEN (o.payload->>'finding_id')::bigint END
  LEFT JOIN payments p ON p.id = f.payment_id
 WHERE o.held_at IS NOT NULL AND o.approved_at IS NULL AND o.processed_at IS NULL
   AND f.resolved_at IS NULL
 ORDER BY o.id
 LIMIT @limit
