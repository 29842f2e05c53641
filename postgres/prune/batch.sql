-- One bounded batch of a prune target (postgres.PruneTarget): the table,
-- its time column and its keep rule (a boolean over the row t: rows it
-- protects are never deleted) are filled in from the target, the
-- identifiers quoted. The batch examines at most @limit rows, the oldest
-- first from @from on (an index range scan on the time column), and deletes
-- those older than @before that the keep rule lets go. A row another pruner
-- holds is skipped (SKIP LOCKED: two pruners never wait for each other, nor
-- deadlock); its row locks last as long as this one statement.
--   @from, @before  the time range, [@from, @before)
--   @limit          rows examined at most
-- Returns the rows deleted, the rows examined, and the time of the last row
-- examined (where the next batch starts).
WITH scan AS (
    SELECT t.ctid AS tid, t.{{time}} AS at, ({{keep}}) AS keep
      FROM {{table}} t
     WHERE t.{{time}} >= @from::timestamptz AND t.{{time}} < @before::timestamptz
     ORDER BY t.{{time}}
     LIMIT @limit
),
doomed AS (
    SELECT t.ctid
      FROM {{table}} t
     WHERE t.ctid = ANY (ARRAY(SELECT tid FROM scan WHERE NOT keep))
       FOR UPDATE SKIP LOCKED
),
gone AS (
    DELETE FROM {{table}} t
     WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM doomed))
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone)::bigint, (SELECT count(*) FROM scan)::int, (SELECT max(at) FROM scan)
