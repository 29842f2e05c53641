-- The seeded payments' ids by PaymentIntent, or by order for a session row
-- (which records no PaymentIntent).
SELECT id, coalesce(stripe_payment_intent_id, order_id::text) FROM payments
