-- The session holding the advisory lock @classid/@objid (a job's lease) in
-- this database, if any.
SELECT a.pid, a.application_name, host(a.client_addr), a.backend_start
  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted
   AND l.classid = @classid::bigint::oid AND l.objid = @objid::bigint::oid AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
