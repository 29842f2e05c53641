-- Take the job's lease if it is free: true when taken.
SELECT pg_try_advisory_lock(@key)
