-- Whether repairs are still coming: commands unprocessed, and whether River
-- has a delivery job of @kind that may still run.
SELECT (SELECT count(*) FROM outbox WHERE processed_at IS NULL)::int,
       EXISTS (SELECT 1 FROM river_job
                WHERE kind = @kind AND state IN ('available', 'running', 'retryable', 'scheduled'))
