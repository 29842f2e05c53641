-- Timeline source "finding": the detection and resolution of every finding
-- of the payment (or of the PaymentIntent with no local row).
WITH fs AS (
    SELECT id, kind, verdict, reason, detected_at, resolved_at, resolution, resolved_by, resolution_note, local_status,
           external_status
      FROM reconciliation_findings
     WHERE id = @finding_id
        OR payment_id = @payment_id::bigint
        OR (payment_id IS NULL AND stripe_payment_intent_id = @intent_id::text))
SELECT detected_at, 'Finding #' || id || ' opened: ' || kind,
       verdict || ' (local ' || local_status || ', Stripe ' || coalesce(external_status, 'no such PaymentIntent') || '): ' || reason
  FROM fs
UNION ALL
SELECT resolved_at, 'Finding #' || id || ' resolved: ' || coalesce(resolution, ''),
       concat_ws(': ', 'by ' || resolved_by, resolution_note)
  FROM fs
 WHERE resolved_at IS NOT NULL
