-- An operator closes an open finding, saying who and why.
--   @id, @now, @resolution (operator), @by, @note
UPDATE reconciliation_findings
   SET resolved_at = @now, resolution = @resolution, resolved_by = @by, resolution_note = @note
 WHERE id = @id AND resolved_at IS NULL
