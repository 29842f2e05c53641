-- The indexes of payments (a plain table; a view has none), each with the
-- columns it leads with, for `payrecon doctor`: whether it is unique or the
-- primary key, and whether it is valid (an interrupted CREATE INDEX
-- CONCURRENTLY leaves it INVALID, and the planner never uses it). Reads
-- the catalogue only.
SELECT ic.relname::text,
       array_agg(a.attname::text ORDER BY k.ord) AS columns,
       i.indisunique, i.indisprimary, i.indisvalid
  FROM pg_index i
  JOIN pg_class ic ON ic.oid = i.indexrelid
 CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
  LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
 WHERE i.indrelid = to_regclass('payments')
 GROUP BY ic.relname, i.indisunique, i.indisprimary, i.indisvalid
 ORDER BY ic.relname
