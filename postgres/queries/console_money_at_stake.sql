-- Money at stake: per kind and currency, the sum of what Stripe said the
-- payment is for, over the open findings that recorded an amount. Findings
-- without one are not counted (unknown is not zero).
SELECT kind, lower(details->>'currency'), sum((details->>'amount')::bigint), count(*)
  FROM reconciliation_findings
 WHERE resolved_at IS NULL
   AND details->>'amount' ~ '^-?[0-9]{1,18}$'
   AND coalesce(details->>'currency', '') <> ''
 GROUP BY 1, 2
 ORDER BY 1, 2
