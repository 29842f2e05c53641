-- `demo --accounts`: the platform's payments table records each row's
-- connected account (NULL for the platform's own), as a platform on
-- Connect does; payrecon detects the column (--account-column) but never
-- adds it.
ALTER TABLE payments ADD COLUMN IF NOT EXISTS stripe_account_id text
