-- The demo's payments table keeps each order's amount (minor units) and
-- currency, as many applications do: payrecon compares them with Stripe's
-- (--amount-column, --currency-column) but never adds them itself.
ALTER TABLE payments ADD COLUMN IF NOT EXISTS amount bigint, ADD COLUMN IF NOT EXISTS currency text
