-- The stuck rows' first observation in requires_capture, as an earlier run
-- of payrecon would have left it (payment_inflight_observations, 00016).
--   @ids     the stuck payments
--   @status  requires_capture
--   @since   when they were first observed there
INSERT INTO payment_inflight_observations (payment_id, stripe_status, first_observed_at)
SELECT unnest(@ids::bigint[]), @status, @since
