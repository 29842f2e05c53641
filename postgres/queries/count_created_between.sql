-- How many payments rows were created in [@lo, @hi], counting no further
-- than @limit (an index range scan on payments_created_at that stops there):
-- list mode's estimate of the PaymentIntents a window holds.
SELECT count(*)
  FROM (SELECT 1 FROM payments WHERE created_at BETWEEN @lo AND @hi LIMIT @limit) w
