-- Record that notifications are configured for this database (a relay with
-- --notify-url starts): from now on every process that makes a transition
-- inserts its notification job. enabled_at keeps the first time; enabled_by
-- (the session's application_name) and seen_at the latest process.
--   @now
INSERT INTO payrecon_notifications AS n (enabled_at, enabled_by, seen_at)
VALUES (@now, coalesce(nullif(current_setting('application_name'), ''), 'unknown'), @now)
    ON CONFLICT (singleton) DO UPDATE
   SET enabled_by = EXCLUDED.enabled_by, seen_at = EXCLUDED.seen_at
