-- The server's connection limits and what is open now, for `payrecon
-- doctor`: max_connections, the slots reserved for superusers (and, from
-- PostgreSQL 16, reserved_connections), and the client connections open
-- on the whole server, all of them and those that are not payrecon's
-- (application_name "payrecon …"). Reading pg_stat_activity needs no
-- privilege for the counts.
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int
         + coalesce(current_setting('reserved_connections', true)::int, 0),
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int,
       (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'
                                               AND application_name NOT LIKE 'payrecon %')::int
