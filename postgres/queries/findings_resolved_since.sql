-- Findings resolved after @since, by kind and resolution.
SELECT kind, coalesce(resolution, ''), count(*)
  FROM reconciliation_findings
 WHERE resolved_at > @since
 GROUP BY 1, 2
 ORDER BY 1, 2
