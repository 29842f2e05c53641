-- Settles held repair commands (repair mode review), oldest first, at most
-- @limit: each still held (not approved, not processed) whose finding is
-- open is approved by @operator when @approve; each whose finding closed
-- meanwhile (healed, superseded, resolved by hand) or is gone is dropped:
-- marked processed with outcome 'dropped: …', so it is never applied.
-- Without @approve only those to drop are selected. A held command naming
-- no finding (none of payrecon's) has nothing to heal: it is approved.
-- The rows are locked in id order (two approvers at once: the second waits
-- and then finds them approved), and the caller makes each approved
-- command's job available and deletes each dropped command's job in the
-- same transaction. Returns one row per command settled, with its job
-- (River's GIN index on args).
--   @ids (outbox ids; ignored when @all), @all, @approve, @operator, @now,
--   @limit, @kind (River's job kind of repairs), @dropped (outcome prefix)
WITH held AS (
    SELECT o.id, fid.finding_id,
           fid.finding_id IS NULL OR (f.id IS NOT NULL AND f.resolved_at IS NULL) AS open,
           CASE WHEN f.id IS NULL THEN 'finding ' || fid.finding_id || ' no longer exists'
                ELSE 'finding ' || f.id || ' was ' || coalesce(f.resolution, 'resolved') || ' before an approval'
           END AS why
      FROM outbox o
     CROSS JOIN LATERAL (SELECT CASE WHEN o.payload->>'finding_id' ~ '^[0-9]{1,18}$'
                                     THEN (o.payload->>'finding_id')::bigint END AS finding_id) fid
      LEFT JOIN reconciliation_findings f ON f.id = fid.finding_id
     WHERE o.held_at IS NOT NULL AND o.approved_at IS NULL AND o.processed_at IS NULL
       AND (@all::boolean OR o.id = ANY(@ids::bigint[]))
       AND (@approve::boolean OR NOT (fid.finding_id IS NULL OR (f.id IS NOT NULL AND f.resolved_at IS NULL)))
     ORDER BY o.id
     LIMIT @limit
       FOR UPDATE OF o
),
approved AS (
    UPDATE outbox o
       SET approved_at = @now, approved_by = @operator
      FROM held h
     WHERE o.id = h.id AND h.open AND @approve::boolean
    RETURNING o.id
),
dropped AS (
    UPDATE outbox o
       SET processed_at = @now, outcome = @dropped || h.why, last_error = NULL
      FROM held h
     WHERE o.id = h.id AND NOT h.open
    RETURNING o.id, o.outcome
)
SELECT h.id, h.finding_id,
       h.id IN (SELECT id FROM approved)                    AS approved,
       (SELECT d.outcome FROM dropped d WHERE d.id = h.id)  AS dropped,
       j.id                                                 AS job_id
  FROM held h
  LEFT JOIN LATERAL (SELECT rj.id FROM river_job rj
                      WHERE rj.kind = @kind AND rj.args @> jsonb_build_object('outbox_id', h.id)
                      ORDER BY rj.id DESC LIMIT 1) j ON true
 ORDER BY h.id
