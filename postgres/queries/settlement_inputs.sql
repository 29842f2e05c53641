-- What the settlement rules look at, one row per PaymentIntent in scope,
-- in PaymentIntent order:
--   scope       the PaymentIntents of the lines of one payout (@payout_id),
--               or, for a whole round (@payout_id NULL): those of the lines
--               of every payout of @account created since @since, those
--               with an open settlement finding (to heal them), and the
--               paid_not_settled candidates: paid locally, verified
--               succeeded, created since the first automatic payout read
--               (and since @since) and at least @settle_after ago, in no
--               line (skipped when @settle_after is 0);
--   local       its payments row (the first by id), with the money columns
--               when the store reads them (NULL otherwise);
--   settled     what every line of every payout read says of it: charge
--               lines and their gross, what was kept (all its lines'
--               amounts), fees, net, the currency (NULL when several), any
--               conversion, the payout and arrival date of its first charge;
--   later_payout an automatic payout read in full was created at least
--               @settle_after after the payment, which is no older than the
--               first automatic payout read;
--   open_kinds  its open settlement findings' kinds;
--   unmatched   a line of it has no payment_id although a row exists.
--   @account, @since, @payout_id (or NULL), @kinds (the settlement kinds),
--   @paid, @succeeded, @charge (the charge reporting category),
--   @settle_after, @now
WITH coverage AS (
    SELECT min(created) AS first, max(created) AS last
      FROM stripe_payouts
     WHERE account = @account AND automatic AND lines_read_at IS NOT NULL
),
scope AS (
    SELECT l.payment_intent_id AS intent_id
      FROM stripe_payout_lines l
      JOIN stripe_payouts p ON p.payout_id = l.payout_id
     WHERE l.payment_intent_id IS NOT NULL
       AND p.account = @account
       AND CASE WHEN @payout_id::text IS NULL THEN p.created >= @since ELSE l.payout_id = @payout_id END
    UNION
    SELECT f.stripe_payment_intent_id
      FROM reconciliation_findings f
     WHERE @payout_id::text IS NULL
       AND f.resolved_at IS NULL
       AND f.kind = ANY(@kinds::text[])
       AND f.stripe_payment_intent_id IS NOT NULL
    UNION
    SELECT pay.stripe_payment_intent_id
      FROM payments pay, coverage c
     WHERE @payout_id::text IS NULL
       AND @settle_after::interval > interval '0'
       AND pay.status = @paid
       AND pay.observed_external_status = @succeeded
       AND pay.created_at >= greatest(@since::timestamptz, c.first)
       AND pay.created_at <= @now::timestamptz - @settle_after::interval
       AND pay.stripe_payment_intent_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM stripe_payout_lines l WHERE l.payment_intent_id = pay.stripe_payment_intent_id)
)
SELECT s.intent_id,
       loc.id, loc.order_id, loc.status, loc.amount, loc.currency, loc.created_at, loc.observed_external_status,
       coalesce(agg.charges, 0), coalesce(agg.gross, 0), coalesce(agg.kept, 0), coalesce(agg.fee, 0), coalesce(agg.net, 0),
       agg.currency, coalesce(agg.converted, false), agg.payout_id, agg.arrival_date,
       coalesce(loc.created_at >= c.first AND c.last >= loc.created_at + @settle_after::interval, false) AS later_payout,
       ARRAY(SELECT f.kind FROM reconciliation_findings f
              WHERE f.resolved_at IS NULL AND f.kind = ANY(@kinds::text[])
                AND (f.payment_id = loc.id OR (f.payment_id IS NULL AND f.stripe_payment_intent_id = s.intent_id))
              ORDER BY f.kind) AS open_kinds,
       coalesce(loc.id IS NOT NULL AND agg.unmatched, false) AS unmatched
  FROM scope s
 CROSS JOIN coverage c
  LEFT JOIN LATERAL (
        SELECT pay.id, pay.order_id, pay.status, NULL::bigint /*amount:pay*/ AS amount, NULL::text /*currency:pay*/ AS currency,
               pay.created_at, pay.observed_external_status
          FROM payments pay
         WHERE pay.stripe_payment_intent_id = s.intent_id
         ORDER BY pay.id
         LIMIT 1) loc ON true
  LEFT JOIN LATERAL (
        SELECT count(*) FILTER (WHERE l.reporting_category = @charge)                   AS charges,
               sum(l.amount) FILTER (WHERE l.reporting_category = @charge)              AS gross,
               sum(l.amount)                                                            AS kept,
               sum(l.fee)                                                               AS fee,
               sum(l.net)                                                               AS net,
               CASE WHEN count(DISTINCT l.currency) = 1 THEN min(l.currency) END        AS currency,
               bool_or(l.converted)                                                     AS converted,
               (array_agg(l.payout_id ORDER BY l.created, l.balance_transaction_id)
                    FILTER (WHERE l.reporting_category = @charge))[1]                  AS payout_id,
               (array_agg(p.arrival_date ORDER BY l.created, l.balance_transaction_id)
                    FILTER (WHERE l.reporting_category = @charge))[1]                  AS arrival_date,
               bool_or(l.payment_id IS NULL)                                            AS unmatched
          FROM stripe_payout_lines l
          JOIN stripe_payouts p ON p.payout_id = l.payout_id
         WHERE l.payment_intent_id = s.intent_id) agg ON true
 ORDER BY s.intent_id
