-- Rows a batch could not check at all because they name no PaymentIntent
-- (stripe_payment_intent_id NULL or empty): one open needs_review finding of
-- kind @kind each, deduplicated by the partial unique index, and only while
-- the row is still that way (the application may have fixed it since the
-- batch read it). They leave the recheck queue: nothing is retried early
-- until the row changes. The payments row itself is not touched: it was
-- not verified. Healing is the ordinary one: once the row names an intent
-- and is seen in sync, commit_checks.sql resolves its open findings.
--   @ids (payment ids), @kind, @verdict, @reason, @job, @now
WITH invalid AS (
    SELECT p.id, coalesce(p.status::text, '') AS status
      FROM payments p
     WHERE p.id = ANY(@ids::bigint[])
       AND coalesce(p.stripe_payment_intent_id::text, '') = ''
),
dequeued AS (
    DELETE FROM reconciliation_recheck r
     USING invalid i
     WHERE r.job = @job AND r.payment_id = i.id
)
INSERT INTO reconciliation_findings
       (payment_id, kind, verdict, local_status, reason, job, detected_at)
SELECT i.id, @kind, @verdict, i.status, @reason, @job, @now
  FROM invalid i
 ORDER BY i.id
    ON CONFLICT (payment_id, kind) WHERE resolved_at IS NULL DO NOTHING
RETURNING kind
