-- Why the last delivery attempt of an outbox command failed, for operators.
-- Written in its own statement after the attempt's transaction rolled back;
-- a later successful attempt clears it (postgres.Writer.ApplyRepair).
-- $1 outbox id, $2 error.
UPDATE outbox
   SET last_error = $2
 WHERE id = $1 AND processed_at IS NULL
