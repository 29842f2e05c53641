-- Open findings by kind and verdict (the partial index on open kinds).
SELECT kind, verdict, count(*)
  FROM reconciliation_findings
 WHERE resolved_at IS NULL
 GROUP BY kind, verdict
 ORDER BY count(*) DESC, kind
