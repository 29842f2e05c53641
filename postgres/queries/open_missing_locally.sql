-- PaymentIntents seen in Stripe with no local payments row become
-- missing_locally findings (payment_id NULL), deduplicated by the partial
-- unique index reconciliation_findings_open_orphan. Both the sweep's list
-- mode (many intents at once) and a webhook or event about an unknown
-- intent (one) open them here; the sweep resolves them when a local row
-- appears (resolve_orphans.sql).
--   @intent_ids, @statuses  the intents and the Stripe status of each
--   @reason                 why, in words
--   @job                    who saw them: the sweep job, or 'webhook'
--   @kind, @verdict         missing_locally, needs_review
--   @local_status           the placeholder for "no local row"
--   @now                    detected at
-- Returns the id of each finding opened (none for an intent that has a local
-- row, is a session row's session's intent (payrecon_session_intents), or
-- has an open finding already).
WITH input AS (
    SELECT * FROM unnest(@intent_ids::text[], @statuses::text[]) AS t(intent_id, status)
)
INSERT INTO reconciliation_findings
       (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
        reason, job, detected_at)
SELECT NULL, i.intent_id, @kind, @verdict, @local_status, i.status, @reason, @job, @now
  FROM input i
 WHERE NOT EXISTS (SELECT 1 FROM payments p WHERE p.stripe_payment_intent_id = i.intent_id)
   AND NOT EXISTS (SELECT 1 FROM payrecon_session_intents s WHERE s.intent_id = i.intent_id)
    ON CONFLICT DO NOTHING
RETURNING id
