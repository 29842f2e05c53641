-- Deliveries River gave up on (discarded after their last attempt, or
-- cancelled as invalid), of job kind @kind: the dead letters.
SELECT count(*) FROM river_job WHERE kind = @kind AND state IN ('discarded', 'cancelled')
