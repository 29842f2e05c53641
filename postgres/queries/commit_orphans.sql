-- PaymentIntents seen in Stripe with no local row become missing_locally
-- findings (payment_id NULL, deduplicated by the orphan partial index); open
-- missing_locally findings whose intent now has a local row are resolved.
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[]) AS t(intent_id, status)
),
opened AS (
    INSERT INTO reconciliation_findings
           (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
            reason, job, detected_at)
    SELECT NULL, i.intent_id, 'missing_locally', 'needs_review', '(none)', i.status,
           'a PaymentIntent exists in Stripe with no local payments row', $3, $4
      FROM input i
     WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.stripe_payment_intent_id = i.intent_id)
        ON CONFLICT DO NOTHING
    RETURNING id
)
SELECT count(*)::int FROM opened
