-- The repair commands of a payment still in the outbox (processed ones are
-- pruned after --retain-outbox), oldest first.
--   @payment_id, @limit
SELECT id, event_type, created_at, processed_at, coalesce(outcome, ''), coalesce(last_error, '')
  FROM outbox
 WHERE aggregate_type = 'Payment' AND aggregate_id = (@payment_id::bigint)::text
 ORDER BY id
 LIMIT @limit
