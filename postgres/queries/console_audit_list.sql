-- The latest console actions.
SELECT id, at, operator, action, coalesce(finding_id, 0), coalesce(job_id, 0), note, outcome
  FROM console_audit
 ORDER BY at DESC, id DESC
 LIMIT @limit::int
