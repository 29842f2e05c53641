-- Whether a console session exists and has not expired.
SELECT EXISTS (SELECT 1 FROM console_sessions WHERE id_hash = @id_hash AND expires_at > @now)
