-- Whether payrecon may lock payments rows (the canonical writer's SELECT …
-- FOR UPDATE): planned, never run, so it reads and locks no row. It fails
-- on a view PostgreSQL cannot lock through (an outer join, DISTINCT,
-- GROUP BY) and without UPDATE privilege.
EXPLAIN (COSTS OFF) SELECT 1 FROM payments FOR UPDATE
