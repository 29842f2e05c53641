-- Why a console resolution changed nothing: the finding's resolution, if any.
SELECT coalesce(resolution, ''), coalesce(resolved_by, '')
  FROM reconciliation_findings
 WHERE id = @finding_id
