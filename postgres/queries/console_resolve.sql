-- Resolve an open finding by hand from the console and record the action,
-- in one statement: the finding is never closed without its audit entry.
WITH resolved AS (
    UPDATE reconciliation_findings
       SET resolved_at = @at, resolution = @resolution, resolved_by = @operator, resolution_note = @note
     WHERE id = @finding_id AND resolved_at IS NULL
 RETURNING id)
INSERT INTO console_audit (at, operator, action, finding_id, note, outcome)
SELECT @at, @operator, @action, id, @note, @outcome
  FROM resolved
RETURNING id
