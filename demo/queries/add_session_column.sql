-- The demo's application sells through Checkout Sessions too: a session
-- row records its session (cs_…) and no PaymentIntent until payment, so
-- the PaymentIntent id may be NULL. payrecon never adds the session column
-- (--session-column); it reads the rows through it when it is there.
ALTER TABLE payments ADD COLUMN IF NOT EXISTS stripe_checkout_session_id text,
                     ALTER COLUMN stripe_payment_intent_id DROP NOT NULL
