-- Which relation "payments" is for this session (search_path decides): its
-- pg_class relkind ('r' table, 'p' partitioned table, 'v' view, …) and its
-- schema-qualified name, both NULL when there is none; and current_schema(),
-- where payrecon's own tables go (NULL when no schema of search_path exists).
SELECT c.relkind::text, CASE WHEN c.oid IS NOT NULL THEN format('%I.%I', n.nspname, c.relname) END,
       current_schema()::text
  FROM (SELECT 1) AS one
  LEFT JOIN pg_class c ON c.oid = to_regclass('payments')
  LEFT JOIN pg_namespace n ON n.oid = c.relnamespace
