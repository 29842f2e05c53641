-- The payout figures of the metrics, over the payouts created since
-- @since: how many, how many whose lines (read in full) do not add up to
-- the amount, how many failed or were canceled after payrecon saw them
-- paid, how many automatic ones still wait for their lines, and how many
-- lines name a PaymentIntent with no local payment.
--   @since, @failed, @canceled
SELECT count(*)::bigint,
       count(*) FILTER (WHERE p.lines_read_at IS NOT NULL AND p.lines_net IS DISTINCT FROM p.amount)::bigint,
       count(*) FILTER (WHERE p.paid_seen_at IS NOT NULL AND p.status = @failed)::bigint,
       count(*) FILTER (WHERE p.paid_seen_at IS NOT NULL AND p.status = @canceled)::bigint,
       count(*) FILTER (WHERE p.automatic AND p.lines_read_at IS NULL)::bigint,
       (SELECT count(*) FROM stripe_payout_lines l JOIN stripe_payouts q ON q.payout_id = l.payout_id
         WHERE q.created >= @since AND l.payment_id IS NULL AND l.payment_intent_id IS NOT NULL)::bigint
  FROM stripe_payouts p
 WHERE p.created >= @since
