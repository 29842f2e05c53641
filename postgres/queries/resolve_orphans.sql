-- A missing_locally finding is closed once its intent has a local row.
--   @intent_ids  the intents of the batch's rows
--   @kind, @resolution  missing_locally, local_row_appeared
--   @job, @now
UPDATE reconciliation_findings f
   SET resolved_at = @now, resolution = @resolution, resolved_by = 'sweep:' || @job
 WHERE f.payment_id IS NULL
   AND f.resolved_at IS NULL
   AND f.kind = @kind
   AND f.stripe_payment_intent_id = ANY(@intent_ids::text[])
RETURNING kind
