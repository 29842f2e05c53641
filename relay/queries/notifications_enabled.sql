-- Whether notifications are configured for this database: a process
-- started with --notify-url recorded it (queries/notifications_record.sql).
-- A process without the URL then still inserts each transition's
-- notification job, for the processes that have it to deliver.
SELECT EXISTS (SELECT 1 FROM payrecon_notifications)
