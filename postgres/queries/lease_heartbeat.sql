-- The holder's heartbeat, by the database clock. No row: the lease was
-- taken over (another epoch) and this holder must step down.
--   @job, @epoch
UPDATE payrecon_leases SET heartbeat_at = now() WHERE job = @job AND epoch = @epoch AND NOT released
