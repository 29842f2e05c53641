-- The River jobs of these kinds that are running or waiting, by kind and
-- their job argument: which accounts' chains exist (platform.Discover).
--   @kinds
SELECT kind || ' ' || coalesce(args->>'job', '')
  FROM river_job
 WHERE kind = ANY(@kinds::text[])
   AND state IN ('available', 'pending', 'running', 'retryable', 'scheduled')
