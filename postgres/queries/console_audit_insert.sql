-- Record a console action.
INSERT INTO console_audit (at, operator, action, finding_id, job_id, note, outcome)
VALUES (@at, @operator, @action, @finding_id::bigint, @job_id::bigint, @note, @outcome)
RETURNING id
