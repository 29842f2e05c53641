-- Whether the relation @name exists for this session (search_path decides).
SELECT to_regclass(@name::text) IS NOT NULL
