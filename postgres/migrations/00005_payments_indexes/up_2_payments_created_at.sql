-- List mode estimates how many PaymentIntents a batch's creation-time
-- window holds from the local rows in it; growth per hour is read here too.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_created_at ON payments (created_at)
