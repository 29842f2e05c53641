-- Why the last delivery attempt of an outbox command failed, for operators.
-- Written in its own statement after the attempt's transaction rolled back;
-- a later successful attempt clears it (postgres.Writer.ApplyRepair).
--   @outbox_id, @error
UPDATE outbox
   SET last_error = @error
 WHERE id = @outbox_id AND processed_at IS NULL
