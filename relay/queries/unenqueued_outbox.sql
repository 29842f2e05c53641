-- Unprocessed outbox commands with no delivery job, in id order after @after.
-- The job lookup uses River's GIN index on river_job.args.
--   @after (outbox id), @kind (job kind), @limit
SELECT o.id
  FROM outbox o
 WHERE o.processed_at IS NULL
   AND o.id > @after
   AND NOT EXISTS (SELECT 1
                     FROM river_job j
                    WHERE j.kind = @kind
                      AND j.args @> jsonb_build_object('outbox_id', o.id))
 ORDER BY o.id
 LIMIT @limit
