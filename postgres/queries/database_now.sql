-- The database's clock now (not the transaction's start): the time a check
-- takes before it asks Stripe (payrecon.Check.ReadAt), compared with the
-- findings' recorded_at, which the same clock writes.
SELECT clock_timestamp()
