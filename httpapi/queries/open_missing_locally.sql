-- An event for a PaymentIntent with no local payments row becomes a
-- missing_locally finding (payment_id NULL), deduplicated by the partial
-- unique index reconciliation_findings_open_orphan; the sweep resolves it
-- when a local row appears.
-- $1 PaymentIntent id, $2 its status in the event, $3 reason, $4 now,
-- $5 kind (missing_locally), $6 verdict (needs_review).
INSERT INTO reconciliation_findings
       (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
        reason, job, detected_at)
VALUES (NULL, $1, $5, $6, '(none)', $2, $3, 'webhook', $4)
    ON CONFLICT DO NOTHING
RETURNING id
