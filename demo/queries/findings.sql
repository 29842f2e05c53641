-- Every finding, in the order they were opened (the scorecard).
SELECT payment_id, coalesce(stripe_payment_intent_id, ''), kind, resolved_at IS NULL, coalesce(resolution, '')
  FROM reconciliation_findings
 ORDER BY id
