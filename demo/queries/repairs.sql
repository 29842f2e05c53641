-- The repair commands: how many, how many applied, how many left, and the
-- median and largest time from detection to repair.
--   @applied (the writer's outcome), @repaired (the finding's resolution)
SELECT count(*)::int,
       count(*) FILTER (WHERE processed_at IS NOT NULL AND outcome = @applied)::int,
       count(*) FILTER (WHERE processed_at IS NULL)::int,
       coalesce((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM resolved_at - detected_at))
                   FROM reconciliation_findings WHERE resolution = @repaired), 0),
       coalesce((SELECT max(extract(epoch FROM resolved_at - detected_at))
                   FROM reconciliation_findings WHERE resolution = @repaired), 0)
  FROM outbox
