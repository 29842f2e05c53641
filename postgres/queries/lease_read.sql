-- The job's lease row, if any, and whether it is free for a taker whose
-- lease timeout is @timeout_seconds: released, its heartbeat older than the
-- timeout (a frozen holder), or its holder's session gone (no session holds
-- the advisory lock (@key, epoch)).
--   @job, @key (the job's lock key), @timeout_seconds
SELECT l.epoch,
       l.released
       OR l.heartbeat_at < now() - make_interval(secs => @timeout_seconds::float8)
       OR NOT EXISTS (SELECT 1 FROM pg_locks k
                       WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2
                         AND k.classid = @key::int4::oid AND k.objid = (l.epoch & 2147483647)::int4::oid
                         AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
  FROM payrecon_leases l
 WHERE l.job = @job
