-- The seeded payments' ids by PaymentIntent.
SELECT id, stripe_payment_intent_id FROM payments
