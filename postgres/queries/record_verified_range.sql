-- A committed batch's verification, recorded as one range of ids (see
-- migration 00026): the job's older ranges inside it go, those it overlaps
-- keep only what lies outside it (one that holds it whole is cut in two),
-- and, for a job whose ranges are not replaced by its cursor (a recent
-- window), ranges read before @prune_before go too.
--   @job, @range_account (the store's account, NULL without Connect)
--   @lo, @hi     the range is (@lo, @hi]
--   @read_min, @read_max   the oldest and newest answer among its rows
--                (NULL when none was read)
--   @row_count   the rows Stripe was read for
--   @prune_before   NULL, or the time before which the job's other ranges
--                are no longer kept
WITH span AS (
    SELECT int8range(@lo::bigint, @hi::bigint, '(]') AS ids
),
pruned AS (
    DELETE FROM reconciliation_verified_ranges r
     USING span s
     WHERE r.job = @job
       AND @prune_before::timestamptz IS NOT NULL
       AND r.read_max < @prune_before::timestamptz
       AND NOT r.ids && s.ids
    RETURNING r.id
),
inside AS (
    DELETE FROM reconciliation_verified_ranges r
     USING span s
     WHERE r.job = @job AND r.ids <@ s.ids
    RETURNING r.id
),
cut AS (
    UPDATE reconciliation_verified_ranges r
       SET ids = CASE WHEN lower(r.ids) < lower(s.ids) THEN int8range(lower(r.ids), lower(s.ids))
                      ELSE int8range(upper(s.ids), upper(r.ids)) END
      FROM span s
     WHERE r.job = @job AND r.ids && s.ids AND NOT r.ids <@ s.ids
    RETURNING r.id
)
INSERT INTO reconciliation_verified_ranges (job, account, ids, read_min, read_max, row_count)
SELECT @job, @range_account::text, s.ids, @read_min::timestamptz, @read_max::timestamptz, @row_count::int
  FROM span s
 WHERE NOT isempty(s.ids)
UNION ALL
-- the upper part of a range that held the new one whole
SELECT r.job, r.account, int8range(upper(s.ids), upper(r.ids)), r.read_min, r.read_max, r.row_count
  FROM reconciliation_verified_ranges r, span s
 WHERE r.job = @job AND lower(r.ids) < lower(s.ids) AND upper(r.ids) > upper(s.ids)
