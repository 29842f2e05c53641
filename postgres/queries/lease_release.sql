-- Give the job's lease up (only if it is still this holder's epoch): a
-- standby takes it at its next poll.
--   @job, @epoch
UPDATE payrecon_leases SET released = true WHERE job = @job AND epoch = @epoch
