-- Notifications of earlier transitions of the same payment that are not
-- delivered yet (any job state but completed; an operator's cancellation
-- gives up on one), and when the first of them is next due. A notification
-- waits for these: one payment's transitions reach the application in
-- version order. The lookup uses River's GIN index on river_job.args.
--   @kind (relay.NotifyKind), @payment_id, @version
SELECT count(*), min(j.scheduled_at) FILTER (WHERE j.state IN ('available', 'scheduled', 'retryable', 'pending'))
  FROM river_job j
 WHERE j.kind = @kind
   AND j.args @> jsonb_build_object('payment_id', @payment_id::bigint)
   AND (j.args->>'version')::bigint < @version
   AND j.state NOT IN ('completed', 'cancelled')
