-- Open findings by kind (reconciliation_findings_open_kind).
SELECT kind, count(*)::bigint
  FROM reconciliation_findings
 WHERE resolved_at IS NULL
 GROUP BY kind
 ORDER BY kind
