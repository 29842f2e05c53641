-- A resolved finding stays while a repair command for it waits in the
-- outbox (outbox_finding index): the relay reads the finding when it
-- applies the command. An open finding is never a candidate: its
-- resolved_at is NULL.
EXISTS (SELECT 1
          FROM outbox o
         WHERE o.payload ? 'finding_id' AND o.payload->>'finding_id' = t.id::text
           AND o.processed_at IS NULL)
