-- The goose versions recorded as applied (payrecon_schema_migrations), for
-- CheckMigrations: a read, so that read-only commands never write (goose's
-- own check creates the table when it is missing).
SELECT DISTINCT version_id
  FROM payrecon_schema_migrations
 WHERE is_applied
