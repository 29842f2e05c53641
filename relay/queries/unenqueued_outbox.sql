-- Unprocessed outbox commands with no delivery job, in id order after $1.
-- The job lookup uses River's GIN index on river_job.args.
-- $1 after id, $2 job kind, $3 limit.
SELECT o.id
  FROM outbox o
 WHERE o.processed_at IS NULL
   AND o.id > $1
   AND NOT EXISTS (SELECT 1
                     FROM river_job j
                    WHERE j.kind = $2
                      AND j.args @> jsonb_build_object('outbox_id', o.id))
 ORDER BY o.id
 LIMIT $3
