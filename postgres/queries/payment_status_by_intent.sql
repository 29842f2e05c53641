-- The local payment of a PaymentIntent and its status, for a charge event
-- (charge.refunded, charge.dispute.created): no row when there is none.
-- Read inside the event's transaction; nothing is locked or changed.
--   @intent_id
SELECT id, status
  FROM payments
 WHERE stripe_payment_intent_id = @intent_id
