-- Wait for the job's lease: a session-level advisory lock on @key.
SELECT pg_advisory_lock(@key)
