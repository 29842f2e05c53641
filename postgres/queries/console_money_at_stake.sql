-- Money at stake: per kind and currency, the sum over the open findings of
-- the amount their kind puts at stake (payrecon.Kind.StakeBasis, the one
-- rule, passed in): the refunded amount for @refunded_kinds, the disputed
-- (captured) amount for @disputed_kinds, what Stripe said the payment is
-- for otherwise. Findings without that amount are not counted (unknown is
-- not zero).
WITH staked AS (
    SELECT kind,
           CASE WHEN kind = ANY (@refunded_kinds::text[]) THEN details->'charge'->>'amount_refunded'
                WHEN kind = ANY (@disputed_kinds::text[]) THEN details->'charge'->>'amount_captured'
                ELSE details->>'amount' END AS amount,
           lower(CASE WHEN kind = ANY (@refunded_kinds::text[]) OR kind = ANY (@disputed_kinds::text[])
                      THEN coalesce(nullif(details->'charge'->>'currency', ''), details->>'currency')
                      ELSE details->>'currency' END) AS currency
      FROM reconciliation_findings
     WHERE resolved_at IS NULL)
SELECT kind, currency, sum(amount::bigint), count(*)
  FROM staked
 WHERE amount ~ '^-?[0-9]{1,18}$'
   AND coalesce(currency, '') <> ''
 GROUP BY 1, 2
 ORDER BY 1, 2
