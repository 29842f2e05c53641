-- Marks repair commands held for review (repair mode review), in the
-- transaction that queued them: held_at (migration 00022) says since when
-- they wait. Their River jobs are inserted pending in the same transaction.
--   @ids (outbox ids), @now
UPDATE outbox
   SET held_at = @now
 WHERE id = ANY(@ids::bigint[])
   AND processed_at IS NULL
