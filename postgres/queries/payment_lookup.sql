-- Payments named by an operator: by id (@id, NULL when @q is not a
-- number), PaymentIntent id or order id; three branches so that each uses
-- its own index (order_id's is the application's, if it has one).
--   @id, @q
SELECT id FROM payments WHERE id = @id::bigint
UNION
SELECT id FROM payments WHERE stripe_payment_intent_id = @q
UNION
SELECT id FROM payments WHERE order_id::text = @q
 ORDER BY id
 LIMIT 20
