-- The repair did not reach its target: the finding stays open, with why.
UPDATE reconciliation_findings
   SET repair_outcome = $2
 WHERE id = $1 AND resolved_at IS NULL
