-- Outbox commands by id, with their delivery state.
--   @ids (outbox ids)
SELECT id, event_type, created_at, processed_at, outcome, last_error
  FROM outbox
 WHERE id = ANY(@ids::bigint[])
