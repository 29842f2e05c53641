-- The self-test: touch in-sync rows behind the canonical writer's back, as
-- a buggy application would.
--   @ids
UPDATE payments SET version = version + 1, updated_at = now() WHERE id = ANY (@ids)
