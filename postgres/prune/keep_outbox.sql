-- A processed repair command stays while its River delivery job exists
-- (River's cleaner removes a completed job after --retain-river-jobs; a
-- dead letter stays until an operator retries it; River's GIN index on
-- args), and while its finding is open (findings show reads the command).
-- An unprocessed command is never a candidate: its processed_at is NULL.
EXISTS (SELECT 1 FROM river_job j WHERE j.args @> jsonb_build_object('outbox_id', t.id))
OR EXISTS (SELECT 1
             FROM reconciliation_findings f
            WHERE f.id = CASE WHEN t.payload->>'finding_id' ~ '^[0-9]{1,18}$'
                              THEN (t.payload->>'finding_id')::bigint END
              AND f.resolved_at IS NULL)
