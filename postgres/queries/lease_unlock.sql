-- Let go of the session lock on (@key, @epoch).
SELECT pg_advisory_unlock(@key::int4, (@epoch::bigint & 2147483647)::int4)
