-- What a prune target would delete (--dry-run), filled in like batch.sql:
-- the rows older than @before, those the keep rule lets go and those it
-- keeps. Reads the old rows through the index on the time column; deletes
-- and locks nothing.
SELECT count(*) FILTER (WHERE NOT old.keep), count(*) FILTER (WHERE old.keep)
  FROM (SELECT ({{keep}}) AS keep
          FROM {{table}} t
         WHERE t.{{time}} < @before::timestamptz) AS old
