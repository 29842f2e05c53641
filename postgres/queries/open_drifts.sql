-- Opens the drifts a charge event found on one payment (money kinds), each
-- its own needs_review finding, deduplicated by the partial unique index on
-- open findings exactly as the sweep's commit_checks.sql does; never a
-- repair command, never a change to payments. The sweep heals them later
-- if the drift goes away.
--   @payment_id, @intent_id, @local_status   the payment
--   @drifts      a JSON array of {kind, reason} (payrecon.Drift)
--   @verdict     needs_review
--   @job         who saw them: 'webhook'
--   @details     what the event said (postgres.FindingDetails)
--   @now         detected at
-- Returns the id and kind of each finding opened.
INSERT INTO reconciliation_findings
       (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
        reason, job, detected_at, details)
SELECT @payment_id, @intent_id, d.kind, @verdict, @local_status, NULL, d.reason, @job, @now, @details::jsonb
  FROM json_to_recordset(@drifts::json) AS d(kind text, reason text)
    ON CONFLICT (payment_id, kind) WHERE resolved_at IS NULL DO NOTHING
RETURNING id, kind
