-- One replica's heartbeat, and how many replicas are alive: their
-- heartbeat is younger than @alive (the database's clock). Rows dead for
-- an hour are deleted on the way.
--   @id, @alive
WITH beat AS (
    INSERT INTO payrecon_replicas AS r (id, started_at, seen_at)
    VALUES (@id, now(), now())
        ON CONFLICT (id) DO UPDATE SET seen_at = now()
    RETURNING r.id
), gone AS (
    DELETE FROM payrecon_replicas WHERE seen_at < now() - interval '1 hour' AND id <> @id
)
SELECT 1 + count(*) FROM payrecon_replicas WHERE seen_at > now() - @alive::interval AND id <> @id
