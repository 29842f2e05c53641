-- Prune the charts' history by age, at most @limit rows per statement.
DELETE FROM console_samples
 WHERE minute IN (SELECT minute FROM console_samples WHERE minute < @before::timestamptz ORDER BY minute LIMIT @limit::int)
