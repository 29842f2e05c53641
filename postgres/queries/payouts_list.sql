-- Payouts newest first (keyset pages by (created, payout_id)), of one
-- account or all (@account NULL), with their lines matched and unmatched.
--   @account (or NULL), @before_created and @before_id (the last row of
--   the previous page, or NULL), @payout_id (one payout, or NULL), @limit
SELECT p.payout_id, p.account, p.amount, p.currency, p.status, p.automatic, coalesce(p.method, ''), p.created,
       p.arrival_date, p.reconciliation_status, coalesce(p.failure_code, ''), p.totals, p.lines_count, p.lines_net,
       p.lines_read_at, p.paid_seen_at, p.observed_at,
       (SELECT count(*) FILTER (WHERE l.payment_id IS NOT NULL)
          FROM stripe_payout_lines l WHERE l.payout_id = p.payout_id)::int AS matched,
       (SELECT count(*) FILTER (WHERE l.payment_id IS NULL AND l.payment_intent_id IS NOT NULL)
          FROM stripe_payout_lines l WHERE l.payout_id = p.payout_id)::int AS unmatched
  FROM stripe_payouts p
 WHERE (@account::text IS NULL OR p.account = @account)
   AND (@payout_id::text IS NULL OR p.payout_id = @payout_id)
   AND (@before_created::timestamptz IS NULL OR (p.created, p.payout_id) < (@before_created, @before_id::text))
 ORDER BY p.created DESC, p.payout_id DESC
 LIMIT @limit
