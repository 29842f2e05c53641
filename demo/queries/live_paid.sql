-- How many of the live phase's payments are paid (progress of the live
-- phase).
--   @ids
SELECT count(*) FROM payments WHERE id = ANY (@ids) AND status = 'paid'
