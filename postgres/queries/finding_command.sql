-- The repair command queued with a finding (outbox_finding index).
--   @finding_id (text: the payload's JSON value)
SELECT id
  FROM outbox
 WHERE payload ? 'finding_id' AND payload->>'finding_id' = @finding_id
 ORDER BY id
 LIMIT 1
