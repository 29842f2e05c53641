-- Write what the settlement rules found for a batch of PaymentIntents, in
-- one statement:
--   opened    one needs_review finding per drift, deduplicated by the
--             partial unique indexes on open findings ((payment_id, kind),
--             and (intent, kind) for a PaymentIntent with no local row);
--   healed    open findings of a judged kind that is no longer found
--             (@healed); an open finding about an intent with no local row
--             whose row now exists (@local_row_appeared: the row's own
--             finding replaces it when the drift stands);
--   matched   lines of an intent whose local row appeared get its id.
--   @judgments   a JSON array (postgres.judgmentRow): intent_id,
--                payment_id (or NULL), local_status (or NULL), drifts
--                ([{kind, reason}]), judged ([kind]), details
--   @needs_review, @no_local_row, @healed, @local_row_appeared, @job, @now
WITH input AS (
    SELECT *
      FROM json_to_recordset(@judgments::json) AS t(
           intent_id text, payment_id bigint, local_status text, drifts json, judged json, details jsonb)
),
opened AS (
    INSERT INTO reconciliation_findings
           (payment_id, stripe_payment_intent_id, kind, verdict, local_status, reason, job, detected_at, details)
    SELECT i.payment_id, i.intent_id, d.kind, @needs_review, coalesce(i.local_status, @no_local_row), d.reason, @job, @now, i.details
      FROM input i
     CROSS JOIN LATERAL json_to_recordset(coalesce(i.drifts, '[]')) AS d(kind text, reason text)
        ON CONFLICT DO NOTHING
    RETURNING kind
),
healed AS (
    UPDATE reconciliation_findings f
       SET resolved_at = @now,
           resolution = CASE WHEN f.payment_id IS NULL AND i.payment_id IS NOT NULL THEN @local_row_appeared ELSE @healed END,
           resolved_by = @job,
           resolution_note = CASE WHEN f.payment_id IS NULL AND i.payment_id IS NOT NULL
                                  THEN 'the local row (payment ' || i.payment_id || ') now exists'
                                  ELSE 'no longer seen in the payouts read (' || coalesce(i.local_status, @no_local_row) || ')' END
      FROM input i
     WHERE f.resolved_at IS NULL
       AND (f.payment_id = i.payment_id OR (f.payment_id IS NULL AND f.stripe_payment_intent_id = i.intent_id))
       AND f.kind IN (SELECT json_array_elements_text(coalesce(i.judged, '[]')))
       AND (f.kind NOT IN (SELECT d.kind FROM json_to_recordset(coalesce(i.drifts, '[]')) AS d(kind text, reason text))
            OR (f.payment_id IS NULL AND i.payment_id IS NOT NULL))
    RETURNING f.kind
),
matched AS (
    UPDATE stripe_payout_lines l
       SET payment_id = i.payment_id
      FROM input i
     WHERE l.payment_intent_id = i.intent_id
       AND i.payment_id IS NOT NULL
       AND l.payment_id IS DISTINCT FROM i.payment_id
    RETURNING 1
)
SELECT (SELECT coalesce(array_agg(kind), '{}') FROM opened) AS opened,
       (SELECT coalesce(array_agg(kind), '{}') FROM healed) AS healed,
       (SELECT count(*) FROM matched)::int                  AS matched
