-- The holder of the job's lease, if any: a row not released whose holder's
-- session still holds the lock (@key, epoch). A frozen holder (heartbeat
-- stale) is still named, with its heartbeat, until someone takes over.
--   @job, @key
SELECT l.holder_pid, l.holder, host(a.client_addr), l.acquired_at, l.epoch, l.heartbeat_at
  FROM payrecon_leases l
  LEFT JOIN pg_stat_activity a ON a.pid = l.holder_pid
 WHERE l.job = @job AND NOT l.released
   AND EXISTS (SELECT 1 FROM pg_locks k
                WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2
                  AND k.classid = @key::int4::oid AND k.objid = (l.epoch & 2147483647)::int4::oid
                  AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
