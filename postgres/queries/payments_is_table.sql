-- Whether payments is a plain (or partitioned) table, where payrecon may
-- build indexes; false for a view.
SELECT coalesce((SELECT relkind IN ('r', 'p') FROM pg_class WHERE oid = to_regclass('payments')), false)
