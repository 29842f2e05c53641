-- One finding for its console page, with what Stripe said (details).
SELECT f.id, f.payment_id, coalesce(f.stripe_payment_intent_id, p.stripe_payment_intent_id, ''), coalesce(p.order_id, ''),
       f.kind, f.verdict, f.local_status, coalesce(f.external_status, ''), f.reason, coalesce(f.repair_outcome, ''),
       f.detected_at, f.resolved_at, coalesce(f.resolution, ''), coalesce(f.resolved_by, ''), coalesce(f.resolution_note, ''),
       CASE WHEN f.details->>'amount' ~ '^-?[0-9]{1,18}$' THEN (f.details->>'amount')::bigint END,
       lower(coalesce(f.details->>'currency', '')),
       coalesce(jsonb_pretty(f.details), '')
  FROM reconciliation_findings f
  LEFT JOIN payments p ON p.id = f.payment_id
 WHERE f.id = @finding_id
