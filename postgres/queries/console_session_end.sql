-- End a console session (logout).
DELETE FROM console_sessions WHERE id_hash = @id_hash
