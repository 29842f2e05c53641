-- Everything a batch writes about its rows, in one statement (one round
-- trip, whatever the batch size):
--   verified     rows Stripe was read for AND whose local row is still the
--                one that was classified (same status, version, updated_at
--                and PaymentIntent) AND for which no newer answer is known
--                (last_reconciled_at holds when the stored answer was read,
--                on the database's clock, and the verified ranges of every
--                job (reconciliation_verified_ranges) when their batches
--                read theirs: an older answer never overwrites a newer one);
--   written      of those, the rows whose observed_external_status and
--                last_reconciled_at are written: the observed status
--                changed (or was never stored), the row has or gets
--                findings, it came from the recheck queue (@always), or its
--                refresh is due: once per @refresh_seconds, at a phase set
--                by its id modulo 4,096, so that no cycle rewrites the table
--                and the rows due in a cycle come in runs of consecutive ids
--                (one in every 4,096), on few pages (0: every verified row
--                is written). The
--                other verified rows are not touched: their verification is
--                the batch's range (record_verified_range.sql);
--   new_findings one open finding per (payment, kind), deduplicated by the
--                partial unique index: the status verdict's kind, and beside
--                it each drift (money kinds, stuck_in_flight) as its own
--                finding; each keeps what Stripe returned (details);
--   resolved     open findings recorded before this row's answer was read
--                (recorded_at < read_at: an answer older than a finding
--                never closes it), of verified rows: status findings now in
--                sync (healed) or showing another kind of drift (superseded); open
--                side findings (@side_kinds) of a kind judged again and not
--                found (healed); side findings are never superseded by the
--                status verdict, nor status findings by a drift;
--   commands     a repair command in the outbox for each NEW repairable
--                finding only;
--   rechecks     unverifiable, grace-window and changed rows are queued for
--                an early recheck; verified rows leave the queue.
-- Parameters:
--   @checks      the batch's rows, a JSON array of objects (postgres.checkRow):
--                payment_id, always (write its columns whatever changed),
--                version, intent_id, session_id (the row's Checkout Session,
--                compared as the intent is: '' without the session column),
--                local_status, updated_at
--                (as read, NULL when NULL), read_at (the database's time
--                taken before Stripe was asked for this answer), observed
--                (NULL: Stripe not read), verdict, kind, command, reason,
--                heals (the row is in sync: its open status findings heal),
--                recheck_at and recheck_reason (queue it), err, details
--                (what Stripe returned, or NULL), drifts (a JSON array of
--                {kind, reason}), judged (a JSON array of the side kinds
--                judged for the row)
--   @side_kinds  the kinds recorded beside the status verdict
--   @inflight_statuses   every status a payment can be stuck in
--                (payrecon.StuckStatuses): a verified row observed in one
--                keeps (or starts) its first observation in
--                payment_inflight_observations, a verified row seen in any
--                other status loses it, whatever limits this process has;
--   @stuck_statuses, @stuck_limits   the in-flight statuses with a limit
--                (--stuck-after) and each limit: past it a row gets a
--                @stuck_kind finding, healed only when the row is verified
--                in another status (it settled or moved on), never because
--                this process has another limit or none
--   @needs_review the verdict of a drift's finding
--   @job, @now   the sweep job, the batch's time
--   @refresh_seconds   --verified-refresh in seconds (0: always write)
--   @range_account     the store's account (NULL without Connect): the
--                verified ranges of that account's jobs are compared
--   @grace       how long a row that changed during its check waits
--   @not_found   the observation of a 404 (stored, but never as a finding's
--                external status)
--   @healed, @superseded   resolutions
--   @changed     the recheck reason of a row that changed during its check
--   @account     (an account's store only) the batch's account: a row moved
--                to another account while it was checked is not verified
WITH input AS (
    SELECT *
      FROM json_to_recordset(@checks::json) AS t(
           payment_id bigint, always boolean, version bigint, intent_id text, session_id text, local_status text,
           updated_at timestamptz, read_at timestamptz, observed text,
           verdict text, kind text, command text, reason text, heals boolean,
           recheck_at timestamptz, recheck_reason text, err text,
           details jsonb, drifts json, judged json)
),
newer AS (
    -- The verified ranges (any job's reading the same account's rows) read
    -- after this batch's oldest answer and overlapping its rows: the only
    -- ones that can hold a newer answer for one of them.
    SELECT r.ids, r.read_max
      FROM reconciliation_verified_ranges r
     WHERE r.read_max > (SELECT min(read_at) FROM input)
       AND r.account IS NOT DISTINCT FROM @range_account::text
       AND r.ids && (SELECT int8range(min(payment_id), max(payment_id), '[]') FROM input)
),
judged AS (
    SELECT i.payment_id,
           @refresh_seconds::float8 <= 0
           OR i.always
           OR p.observed_external_status IS DISTINCT FROM i.observed
           OR p.last_reconciled_at IS NULL
           OR i.kind IS NOT NULL
           OR json_array_length(coalesce(i.drifts, '[]')) > 0
           OR EXISTS (SELECT 1 FROM reconciliation_findings f WHERE f.payment_id = p.id AND f.resolved_at IS NULL)
           OR floor(extract(epoch FROM i.read_at) / nullif(@refresh_seconds::float8, 0) + ph.phase)
              > floor(extract(epoch FROM p.last_reconciled_at) / nullif(@refresh_seconds::float8, 0) + ph.phase) AS write
      FROM input i
      JOIN payments p ON p.id = i.payment_id
     CROSS JOIN LATERAL (SELECT mod(mod(p.id, 4096) + 4096, 4096)::float8 / 4096 AS phase) ph
     WHERE i.observed IS NOT NULL
       AND p.version = i.version
       AND p.status = i.local_status
       AND p.updated_at IS NOT DISTINCT FROM i.updated_at
       AND coalesce(p.stripe_payment_intent_id, '') = i.intent_id
       AND ''::text /*session_of:p*/ = coalesce(i.session_id, '')
       AND true /*account:p*/
       AND (p.last_reconciled_at IS NULL OR p.last_reconciled_at <= i.read_at)
       AND NOT EXISTS (SELECT 1 FROM newer r WHERE r.ids @> p.id AND r.read_max > i.read_at)
),
written AS (
    -- The same conditions again: a row the application changes while this
    -- statement runs is re-read here (and so not verified).
    UPDATE payments p
       SET observed_external_status = i.observed,
           last_reconciled_at = i.read_at
      FROM input i
      JOIN judged j ON j.payment_id = i.payment_id AND j.write
     WHERE p.id = i.payment_id
       AND p.version = i.version
       AND p.status = i.local_status
       AND p.updated_at IS NOT DISTINCT FROM i.updated_at
       AND coalesce(p.stripe_payment_intent_id, '') = i.intent_id
       AND ''::text /*session_of:p*/ = coalesce(i.session_id, '')
       AND true /*account:p*/
       AND (p.last_reconciled_at IS NULL OR p.last_reconciled_at <= i.read_at)
    RETURNING p.id
),
verified AS (
    SELECT payment_id AS id FROM judged WHERE NOT write
    UNION ALL
    SELECT id FROM written
),
inflight AS (
    INSERT INTO payment_inflight_observations AS o (payment_id, stripe_status, first_observed_at)
    SELECT i.payment_id, i.observed, @now
      FROM input i
      JOIN verified v ON v.id = i.payment_id
     WHERE i.observed = ANY(@inflight_statuses::text[])
        ON CONFLICT (payment_id) DO UPDATE
       SET stripe_status = EXCLUDED.stripe_status,
           first_observed_at = CASE WHEN o.stripe_status = EXCLUDED.stripe_status
                                    THEN o.first_observed_at ELSE EXCLUDED.first_observed_at END
    RETURNING o.payment_id, o.stripe_status, o.first_observed_at
),
settled AS (
    DELETE FROM payment_inflight_observations o
     USING input i
     WHERE o.payment_id = i.payment_id
       AND i.observed IS NOT NULL
       AND NOT (i.observed = ANY(@inflight_statuses::text[]))
       AND EXISTS (SELECT 1 FROM verified v WHERE v.id = i.payment_id)
    RETURNING o.payment_id
),
stuck AS (
    SELECT f.payment_id,
           'observed in ' || f.stripe_status || ' continuously since '
               || to_char(f.first_observed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"')
               || ', longer than its limit of ' || l.lim::text AS reason
      FROM inflight f
      JOIN unnest(@stuck_statuses::text[], @stuck_limits::interval[]) AS l(status, lim) ON l.status = f.stripe_status
     WHERE f.first_observed_at + l.lim <= @now
),
found AS (
    SELECT i.payment_id, i.kind, i.verdict, i.command, i.reason
      FROM input i
     WHERE i.kind IS NOT NULL
    UNION ALL
    SELECT i.payment_id, d.kind, @needs_review, NULL, d.reason
      FROM input i
     CROSS JOIN LATERAL json_to_recordset(coalesce(i.drifts, '[]')) AS d(kind text, reason text)
    UNION ALL
    SELECT s.payment_id, @stuck_kind, @needs_review, NULL, s.reason
      FROM stuck s
),
new_findings AS (
    INSERT INTO reconciliation_findings
           (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
            repair_command, reason, job, detected_at, details)
    SELECT i.payment_id, i.intent_id, f.kind, f.verdict, i.local_status,
           nullif(i.observed, @not_found), f.command, f.reason, @job, @now, i.details
      FROM found f
      JOIN input i ON i.payment_id = f.payment_id
      JOIN verified v ON v.id = f.payment_id
        ON CONFLICT (payment_id, kind) WHERE resolved_at IS NULL DO NOTHING
    RETURNING id, payment_id, kind, repair_command
),
resolved AS (
    UPDATE reconciliation_findings f
       SET resolved_at = @now,
           resolution = CASE WHEN f.kind = ANY(@side_kinds::text[]) OR i.kind IS NULL THEN @healed ELSE @superseded END,
           resolved_by = 'sweep:' || @job,
           resolution_note = CASE WHEN f.kind = ANY(@side_kinds::text[])
                                  THEN 'no longer seen (' || i.local_status || ' / ' || i.observed || ')'
                                  ELSE 'seen as ' || i.verdict || ' (' || i.local_status || ' / ' || i.observed || ')' END
      FROM input i
      JOIN verified v ON v.id = i.payment_id
     WHERE f.payment_id = i.payment_id
       AND f.resolved_at IS NULL
       AND coalesce(f.recorded_at, '-infinity') < i.read_at
       AND CASE WHEN f.kind = @stuck_kind
                THEN i.observed IS DISTINCT FROM f.external_status
                     AND NOT EXISTS (SELECT 1 FROM stuck s WHERE s.payment_id = i.payment_id)
                WHEN f.kind = ANY(@side_kinds::text[])
                THEN f.kind IN (SELECT json_array_elements_text(coalesce(i.judged, '[]')))
                     AND f.kind NOT IN (SELECT d.kind FROM json_to_recordset(coalesce(i.drifts, '[]')) AS d(kind text, reason text))
                ELSE i.heals OR (i.kind IS NOT NULL AND f.kind <> i.kind)
           END
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
    -- verified_before: the row's last verification (or creation) when it
    -- was first queued, kept while it stays queued (queries/lag.sql): the
    -- later of its columns and the job's range that covers it (whose batch
    -- verified it at read_min or later, or queued it then).
    INSERT INTO reconciliation_recheck AS r (job, payment_id, reason, attempts, due_at, last_error, verified_before)
    SELECT q.job, q.payment_id, q.reason, 1, q.due_at, q.last_error,
           coalesce(greatest(p.last_reconciled_at, vr.read_min), p.created_at)
      FROM (SELECT @job AS job, i.payment_id, i.recheck_reason AS reason, i.recheck_at AS due_at, i.err AS last_error
              FROM input i
             WHERE i.recheck_at IS NOT NULL AND i.observed IS NULL
            UNION ALL
            SELECT @job, s.payment_id, @changed, @now::timestamptz + @grace::interval, 'row changed while it was checked'
              FROM stale s) q
      LEFT JOIN payments p ON p.id = q.payment_id
      LEFT JOIN LATERAL (SELECT max(vr.read_min) AS read_min FROM reconciliation_verified_ranges vr
                          WHERE vr.job = @job AND vr.ids @> q.payment_id) vr ON true
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
