-- The transition a notification tells the application about, with its
-- payment's order and PaymentIntent (NULL when the payment row is gone),
-- and the notifications of earlier transitions of the same payment not
-- delivered yet (any job state but completed; an operator's cancellation
-- gives up on one) with when the first of them is next due (now when one
-- is running; NULL when they are all dead letters). A
-- notification waits for those: one payment's transitions reach the
-- application in version order. One round trip per delivery. The job
-- lookup (River's GIN index on river_job.args) runs only for a payment
-- with earlier transitions (payment_transitions_payment): a GIN lookup
-- scans the index's whole pending list, which a backlog of fresh jobs
-- makes long.
--   @transition_id, @kind (relay.NotifyKind)
SELECT t.id, t.payment_id, p.order_id::text, p.stripe_payment_intent_id, t.from_status, t.to_status,
       t.version, t.source, coalesce(t.source_ref, ''), t.occurred_at, e.earlier, e.due
  FROM payment_transitions t
  LEFT JOIN payments p ON p.id = t.payment_id
 CROSS JOIN LATERAL (
       SELECT count(*) AS earlier,
              min(CASE WHEN j.state = 'running' THEN now()
                       WHEN j.state IN ('available', 'scheduled', 'retryable', 'pending') THEN j.scheduled_at END) AS due
         FROM river_job j
        WHERE EXISTS (SELECT 1 FROM payment_transitions x
                       WHERE x.payment_id = t.payment_id AND x.version < t.version)
          AND j.kind = @kind
          AND j.args @> jsonb_build_object('payment_id', t.payment_id)
          AND (j.args->>'version')::bigint < t.version
          AND j.state NOT IN ('completed', 'cancelled')) e
 WHERE t.id = @transition_id
