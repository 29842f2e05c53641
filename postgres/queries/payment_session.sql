-- The Checkout Session a payment records ('' when none): the session
-- column (postgres.SessionColumn) replaces the ''.
--   @id
SELECT ''::text /*session_of:p*/
  FROM payments p
 WHERE p.id = @id
