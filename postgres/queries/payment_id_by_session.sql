-- The payment that records a Checkout Session, or 0: the session column
-- (postgres.SessionColumn) replaces the ''.
--   @session_id
SELECT coalesce((SELECT p.id FROM payments p WHERE ''::text /*session_of:p*/ = @session_id ORDER BY p.id LIMIT 1), 0)
