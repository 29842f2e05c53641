-- Take the job's lease from epoch @prev (0: no row yet) if it is still at
-- that epoch and free (see lease_read.sql): compare-and-set, so of two
-- takers one wins. The taker already holds the advisory lock (@key,
-- @prev + 1). Returns the new epoch; no row when the lease is held.
--   @job, @key, @prev, @timeout_seconds
INSERT INTO payrecon_leases AS l (job, epoch, holder, holder_pid, acquired_at, heartbeat_at, released)
VALUES (@job, @prev::bigint + 1, current_setting('application_name'), pg_backend_pid(), now(), now(), false)
ON CONFLICT (job) DO UPDATE
   SET epoch = l.epoch + 1, holder = EXCLUDED.holder, holder_pid = EXCLUDED.holder_pid,
       acquired_at = now(), heartbeat_at = now(), released = false
 WHERE l.epoch = @prev::bigint
   AND (l.released
        OR l.heartbeat_at < now() - make_interval(secs => @timeout_seconds::float8)
        OR NOT EXISTS (SELECT 1 FROM pg_locks k
                        WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2
                          AND k.classid = @key::int4::oid AND k.objid = (l.epoch & 2147483647)::int4::oid
                          AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
RETURNING epoch
