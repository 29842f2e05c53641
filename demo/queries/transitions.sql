-- Every transition with its payment's order id, for the shop's report.
SELECT t.id, p.order_id::text, t.to_status, t.occurred_at
  FROM payment_transitions t JOIN payments p ON p.id = t.payment_id
 ORDER BY t.id
