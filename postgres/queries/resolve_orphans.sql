-- A missing_locally finding is closed once its intent has a local row.
UPDATE reconciliation_findings f
   SET resolved_at = $2, resolution = 'local_row_appeared', resolved_by = 'sweep:' || $3
 WHERE f.payment_id IS NULL
   AND f.resolved_at IS NULL
   AND f.kind = 'missing_locally'
   AND f.stripe_payment_intent_id = ANY($1::text[])
RETURNING kind
