-- How many payments rows were created in [@lo, @hi], counting no further
-- than @limit (an index range scan on payments_created_at that stops there):
-- list mode's estimate of the PaymentIntents a window holds (an account's
-- store counts only its account's rows).
--   @lo, @hi, @limit (and @account, for an account's store)
SELECT count(*)
  FROM (SELECT 1 FROM payments p WHERE p.created_at BETWEEN @lo AND @hi AND true /*account:p*/ LIMIT @limit) w
