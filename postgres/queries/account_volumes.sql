-- Each account's rows, and those created since @since (the estimate of its
-- transactions over Stripe's rolling 30 days, for the read allocation);
-- "" is the platform's own (or every row, without the account column).
--   @since
SELECT ''::text /*account_of:p*/ AS account, count(*), count(*) FILTER (WHERE p.created_at >= @since)
  FROM payments p
 GROUP BY 1
 ORDER BY 1
