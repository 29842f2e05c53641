-- What the settlement rules look at, one row per PaymentIntent in scope
-- (in no particular order; run with jit off: its compilation costs more
-- than the query):
--   scope       the PaymentIntents of the lines of one payout (@payout_id),
--               or, for a whole round (@payout_id NULL): those of the lines
--               of every payout of @account created since @since, those
--               with an open settlement finding (to heal them), and the
--               paid_not_settled candidates (of @account's rows, when
--               payments has the account column): paid locally, verified
--               succeeded, created since the first automatic payout read
--               (and since @since) and at least @settle_after ago, in no
--               line (skipped when @settle_after is 0);
--   local       its payments row (the row that records it, else the session
--               row whose Checkout Session named it:
--               payrecon_session_intents), with the money columns
--               when the store reads them (NULL otherwise);
--   settled     what every line of every payout read says of it: charge
--               lines and their gross, what was kept (all its lines'
--               amounts), fees, net, the currency (NULL when several), any
--               conversion, the payout (the least id) of its charge lines and
--               that payout's arrival date;
--   later_payout an automatic payout read in full was created at least
--               @settle_after after the payment, which is no older than the
--               first automatic payout read;
--   open_kinds  its open settlement findings' kinds (every settlement
--               finding names its PaymentIntent);
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
       AND true /*account:pay*/
       AND NOT EXISTS (SELECT 1 FROM stripe_payout_lines l WHERE l.payment_intent_id = pay.stripe_payment_intent_id)
),
agg AS (
    SELECT l.payment_intent_id                                                      AS intent_id,
           count(*) FILTER (WHERE l.reporting_category = @charge)                   AS charges,
           sum(l.amount) FILTER (WHERE l.reporting_category = @charge)              AS gross,
           sum(l.amount)                                                            AS kept,
           sum(l.fee)                                                               AS fee,
           sum(l.net)                                                               AS net,
           CASE WHEN min(l.currency) = max(l.currency) THEN min(l.currency) END     AS currency,
           bool_or(l.converted)                                                     AS converted,
           min(l.payout_id) FILTER (WHERE l.reporting_category = @charge)           AS payout_id,
           bool_or(l.payment_id IS NULL)                                            AS unmatched
      FROM scope s
      JOIN stripe_payout_lines l ON l.payment_intent_id = s.intent_id
     GROUP BY l.payment_intent_id
),
open AS (
    SELECT f.stripe_payment_intent_id AS intent_id, array_agg(f.kind ORDER BY f.kind) AS kinds
      FROM reconciliation_findings f
     WHERE f.resolved_at IS NULL
       AND f.kind = ANY(@kinds::text[])
     GROUP BY f.stripe_payment_intent_id
)
SELECT s.intent_id,
       pay.id, pay.order_id, pay.status, NULL::bigint /*amount:pay*/, NULL::text /*currency:pay*/, pay.created_at,
       pay.observed_external_status,
       coalesce(agg.charges, 0), coalesce(agg.gross, 0), coalesce(agg.kept, 0), coalesce(agg.fee, 0), coalesce(agg.net, 0),
       agg.currency, coalesce(agg.converted, false), agg.payout_id, po.arrival_date,
       coalesce(pay.created_at >= c.first AND c.last >= pay.created_at + @settle_after::interval, false) AS later_payout,
       coalesce(o.kinds, '{}') AS open_kinds,
       coalesce(pay.id IS NOT NULL AND agg.unmatched, false) AS unmatched
  FROM scope s
 CROSS JOIN coverage c
  LEFT JOIN LATERAL (
        SELECT coalesce((SELECT p1.id FROM payments p1 WHERE p1.stripe_payment_intent_id = s.intent_id ORDER BY p1.id LIMIT 1),
                        (SELECT si.payment_id FROM payrecon_session_intents si WHERE si.intent_id = s.intent_id)) AS id
       ) m ON true
  LEFT JOIN payments pay ON pay.id = m.id
  LEFT JOIN agg ON agg.intent_id = s.intent_id
  LEFT JOIN stripe_payouts po ON po.payout_id = agg.payout_id
  LEFT JOIN open o ON o.intent_id = s.intent_id
