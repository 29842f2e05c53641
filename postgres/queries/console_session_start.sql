-- Start a console session, and delete the sessions that have expired.
WITH expired AS (
    DELETE FROM console_sessions WHERE expires_at <= @now
)
INSERT INTO console_sessions (id_hash, operator, created_at, expires_at)
VALUES (@id_hash, @operator, @now, @expires_at)
