-- Lines of the payouts that arrive in [@from, @to) (or of one payout,
-- @payout_id), of one account or all (@account NULL), with the local
-- payment's order id: what `payouts show`, `payouts export` and the
-- console's CSV print. In arrival order, then payout, then the line's own
-- order (newest first, as Stripe lists them).
--   @payout_id (or NULL), @from, @to (ignored with a payout), @account (or NULL)
SELECT l.balance_transaction_id, l.payout_id, l.account, p.arrival_date, l.type, l.reporting_category,
       l.amount, l.fee, l.net, l.currency, l.converted, l.created, coalesce(l.source_id, ''), coalesce(l.source_type, ''),
       coalesce(l.charge_id, ''), coalesce(l.payment_intent_id, ''), l.payment_id, coalesce(pay.order_id, '')
  FROM stripe_payouts p
  JOIN stripe_payout_lines l ON l.payout_id = p.payout_id
  LEFT JOIN LATERAL (SELECT x.order_id FROM payments x WHERE x.id = l.payment_id) pay ON true
 WHERE CASE WHEN @payout_id::text IS NULL
            THEN p.arrival_date >= @from::timestamptz AND p.arrival_date < @to::timestamptz
            ELSE p.payout_id = @payout_id END
   AND (@account::text IS NULL OR p.account = @account)
 ORDER BY p.arrival_date, p.payout_id, l.created DESC, l.balance_transaction_id DESC
