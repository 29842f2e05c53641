-- The columns of payments, as `payrecon migrate` checks them: the name, the
-- type as declared, the base type (a domain's underlying type), and whether
-- payrecon can UPDATE it (through a view: auto-updatable, or an INSTEAD OF
-- UPDATE trigger).
SELECT a.attname::text,
       format_type(a.atttypid, a.atttypmod),
       format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE a.atttypid END, NULL),
       pg_column_is_updatable(a.attrelid, a.attnum, true)
  FROM pg_attribute a
  JOIN pg_type t ON t.oid = a.atttypid
 WHERE a.attrelid = to_regclass('payments') AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum
