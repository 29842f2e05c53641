-- Close a finding after its repair, only if it is still open.
UPDATE reconciliation_findings
   SET resolved_at = $2, resolution = $3, resolved_by = $4, repair_outcome = $5
 WHERE id = $1 AND resolved_at IS NULL
