-- The holder's session lock on (@key, @epoch): it dies with the session, so
-- a standby sees a dead holder at once. True when taken.
SELECT pg_try_advisory_lock(@key::int4, (@epoch::bigint & 2147483647)::int4)
