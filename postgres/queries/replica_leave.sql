-- A replica stops: its share of the budget goes to the others at their
-- next heartbeat.
--   @id
DELETE FROM payrecon_replicas WHERE id = @id
