-- An operator closes an open finding by hand, saying who and why; with
-- @audit the action is recorded in the console's audit trail in the same
-- statement, so a finding closed from the console never lacks its entry.
-- No row: the finding does not exist or was already resolved.
--   @id, @now, @resolution (operator), @by, @note, @audit, @action, @outcome
WITH resolved AS (
    UPDATE reconciliation_findings
       SET resolved_at = @now, resolution = @resolution, resolved_by = @by, resolution_note = @note
     WHERE id = @id AND resolved_at IS NULL
 RETURNING id),
audited AS (
    INSERT INTO console_audit (at, operator, action, finding_id, note, outcome)
    SELECT @now, @by, @action, id, @note, @outcome
      FROM resolved
     WHERE @audit::boolean
 RETURNING id)
SELECT id FROM resolved
