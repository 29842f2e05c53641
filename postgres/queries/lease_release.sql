-- Give the job's lease up.
SELECT pg_advisory_unlock(@key)
