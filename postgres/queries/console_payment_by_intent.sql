-- The local row of a PaymentIntent (0 when there is none).
SELECT coalesce((SELECT id FROM payments WHERE stripe_payment_intent_id = @intent_id), 0)
