-- One minute's sample for the charts. Every replica may try; the first
-- insert of the minute wins (ON CONFLICT DO NOTHING). The lag
-- (@lag_seconds, NULL when payments is empty) is computed by queries/lag.sql
-- first, the open counts from the partial index on open kinds.
WITH k AS (
    SELECT kind, count(*) AS n
      FROM reconciliation_findings
     WHERE resolved_at IS NULL
     GROUP BY kind)
INSERT INTO console_samples (minute, lag_seconds, open_findings, open_by_kind, dead_letters, outbox_backlog)
SELECT @minute::timestamptz,
       @lag_seconds::float8,
       coalesce((SELECT sum(n) FROM k), 0),
       coalesce((SELECT jsonb_object_agg(kind, n) FROM k), '{}'::jsonb),
       (SELECT count(*) FROM river_job WHERE kind = @repair_kind AND state = ANY (@dead_states::river_job_state[])),
       (SELECT count(*) FROM outbox WHERE processed_at IS NULL)
ON CONFLICT (minute) DO NOTHING
