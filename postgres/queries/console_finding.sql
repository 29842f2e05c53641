-- One finding for its console page, with what Stripe said (details).
SELECT f.id, f.payment_id, coalesce(f.stripe_payment_intent_id, p.stripe_payment_intent_id, ''), coalesce(p.order_id, ''),
       f.kind, f.verdict, f.local_status, coalesce(f.external_status, ''), f.reason, coalesce(f.repair_command, ''),
       coalesce(f.repair_outcome, ''), coalesce(f.job, ''), f.detected_at, f.resolved_at, f.resolution,
       coalesce(f.resolved_by, ''), coalesce(f.resolution_note, ''), f.details,
       coalesce(jsonb_pretty(f.details), '')
  FROM reconciliation_findings f
  LEFT JOIN payments p ON p.id = f.payment_id
 WHERE f.id = @finding_id
