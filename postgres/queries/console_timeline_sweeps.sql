-- Timeline source "sweep": the payment's last verification against Stripe
-- and any recheck it waits for.
SELECT last_reconciled_at, 'Verified against Stripe',
       'Stripe said ' || coalesce(observed_external_status, '?') || '; local ' || status || ' (version ' || version || ')'
  FROM payments
 WHERE id = @payment_id::bigint AND last_reconciled_at IS NOT NULL
UNION ALL
SELECT due_at, 'Recheck due (' || reason || ')',
       'job ' || job || ', attempt ' || attempts || coalesce(': ' || last_error, '')
  FROM reconciliation_recheck
 WHERE payment_id = @payment_id::bigint
