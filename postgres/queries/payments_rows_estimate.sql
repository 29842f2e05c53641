-- The size of payments as the planner estimates it: cheap on any table
-- size (metrics read it on every scrape). A view has no statistics of its
-- own: its estimate is that of the largest table it reads (the
-- application's payments table; docs/payments-table.md).
SELECT coalesce(max(greatest(t.reltuples, 0)), 0)::bigint
  FROM pg_class c
  LEFT JOIN pg_rewrite r ON c.relkind = 'v' AND r.ev_class = c.oid
  LEFT JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                       AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> c.oid
  JOIN pg_class t ON t.oid = CASE WHEN c.relkind = 'v' THEN d.refobjid ELSE c.oid END
 WHERE c.oid = 'payments'::regclass
   AND t.relkind IN ('r', 'p', 'm')
