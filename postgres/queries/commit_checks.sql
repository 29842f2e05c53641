-- Everything a batch writes about its rows, in one statement (one round
-- trip, whatever the batch size):
--   verified     last_reconciled_at and observed_external_status advance only
--                for rows Stripe was read for AND whose local row is still
--                the one that was classified (same status and version);
--   new_findings one open finding per (payment, kind), deduplicated by the
--                partial unique index;
--   resolved     open findings of verified rows that are now in sync (healed)
--                or show another kind of drift (superseded);
--   commands     a repair command in the outbox for each NEW repairable
--                finding only;
--   rechecks     unverifiable, grace-window and changed rows are queued for
--                an early recheck; verified rows leave the queue.
-- Parameters:
--   @checks      the batch's rows, a JSON array of objects (postgres.checkRow):
--                payment_id, version, intent_id, local_status, observed
--                (NULL: Stripe not read), verdict, kind, command, reason,
--                heals (the row is in sync: its open findings heal),
--                recheck_at and recheck_reason (queue it), err
--   @job, @now   the sweep job, the batch's time
--   @grace       how long a row that changed during its check waits
--   @not_found   the observation of a 404 (stored, but never as a finding's
--                external status)
--   @healed, @superseded   resolutions
--   @changed     the recheck reason of a row that changed during its check
WITH input AS (
    SELECT *
      FROM json_to_recordset(@checks::json) AS t(
           payment_id bigint, version bigint, intent_id text, local_status text, observed text,
           verdict text, kind text, command text, reason text, heals boolean,
           recheck_at timestamptz, recheck_reason text, err text)
),
verified AS (
    UPDATE payments p
       SET observed_external_status = i.observed,
           last_reconciled_at = @now
      FROM input i
     WHERE p.id = i.payment_id
       AND i.observed IS NOT NULL
       AND p.version = i.version
       AND p.status = i.local_status
    RETURNING p.id
),
new_findings AS (
    INSERT INTO reconciliation_findings
           (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
            repair_command, reason, job, detected_at)
    SELECT i.payment_id, i.intent_id, i.kind, i.verdict, i.local_status,
           nullif(i.observed, @not_found), i.command, i.reason, @job, @now
      FROM input i
      JOIN verified v ON v.id = i.payment_id
     WHERE i.kind IS NOT NULL
        ON CONFLICT (payment_id, kind) WHERE resolved_at IS NULL DO NOTHING
    RETURNING id, payment_id, kind, repair_command
),
resolved AS (
    UPDATE reconciliation_findings f
       SET resolved_at = @now,
           resolution = CASE WHEN i.kind IS NULL THEN @healed ELSE @superseded END,
           resolved_by = 'sweep:' || @job,
           resolution_note = 'seen as ' || i.verdict || ' (' || i.local_status || ' / ' || i.observed || ')'
      FROM input i
      JOIN verified v ON v.id = i.payment_id
     WHERE f.payment_id = i.payment_id
       AND f.resolved_at IS NULL
       AND (i.heals OR (i.kind IS NOT NULL AND f.kind <> i.kind))
    RETURNING f.id, f.kind
),
commands AS (
    INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
    SELECT 'Payment', nf.payment_id::text, nf.repair_command,
           jsonb_build_object('payment_id', nf.payment_id,
                              'finding_id', nf.id,
                              'expected_local_status', i.local_status,
                              'stripe_payment_intent_id', i.intent_id,
                              'observed_external_status', i.observed),
           @now
      FROM new_findings nf
      JOIN input i ON i.payment_id = nf.payment_id
     WHERE nf.repair_command IS NOT NULL
     ORDER BY nf.id
    RETURNING id
),
stale AS (
    SELECT i.payment_id
      FROM input i
     WHERE i.observed IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM verified v WHERE v.id = i.payment_id)
),
recheck_done AS (
    DELETE FROM reconciliation_recheck r
     USING verified v
     WHERE r.job = @job AND r.payment_id = v.id
    RETURNING r.payment_id
),
recheck_add AS (
    INSERT INTO reconciliation_recheck AS r (job, payment_id, reason, attempts, due_at, last_error)
    SELECT @job, i.payment_id, i.recheck_reason, 1, i.recheck_at, i.err
      FROM input i
     WHERE i.recheck_at IS NOT NULL AND i.observed IS NULL
    UNION ALL
    SELECT @job, s.payment_id, @changed, 1, @now::timestamptz + @grace::interval, 'row changed while it was checked'
      FROM stale s
        ON CONFLICT (job, payment_id) DO UPDATE
       SET reason = EXCLUDED.reason,
           attempts = r.attempts + 1,
           due_at = EXCLUDED.due_at,
           last_error = EXCLUDED.last_error
    RETURNING r.payment_id
)
SELECT (SELECT count(*) FROM verified)::int                                       AS verified,
       (SELECT coalesce(array_agg(payment_id ORDER BY payment_id), '{}') FROM stale) AS stale,
       (SELECT coalesce(array_agg(kind), '{}') FROM new_findings)                   AS opened,
       (SELECT coalesce(array_agg(kind), '{}') FROM resolved)                       AS resolved,
       (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM commands)             AS commands
