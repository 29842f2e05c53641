-- Timeline source "operator": console actions on the finding.
SELECT at, operator || ': ' || action, concat_ws(' — ', nullif(note, ''), nullif(outcome, ''))
  FROM console_audit
 WHERE finding_id = @finding_id
