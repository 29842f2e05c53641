-- Opens the decision table's repairable finding of a payment that an event
-- (webhook or catch-up) would have moved, under repair mode review or off,
-- where the event is not applied; and, when @command is set, its repair
-- command in the outbox, recorded as the sweep's commit_checks.sql records
-- them (same payload): a finding only when none of its kind is open (the
-- partial unique index), a command only for a new finding. The caller
-- holds the command for review in the same transaction.
--   @payment_id, @intent_id, @kind, @verdict, @local_status,
--   @external_status, @command (NULL: no command), @reason, @job, @now
WITH nf AS (
    INSERT INTO reconciliation_findings
           (payment_id, stripe_payment_intent_id, kind, verdict, local_status, external_status,
            repair_command, reason, job, detected_at)
    VALUES (@payment_id, @intent_id, @kind, @verdict, @local_status, @external_status,
            @command, @reason, @job, @now)
        ON CONFLICT (payment_id, kind) WHERE resolved_at IS NULL DO NOTHING
    RETURNING id, payment_id, repair_command
),
cmd AS (
    INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload, created_at)
    SELECT 'Payment', nf.payment_id::text, nf.repair_command,
           jsonb_build_object('payment_id', nf.payment_id,
                              'finding_id', nf.id,
                              'expected_local_status', @local_status::text,
                              'stripe_payment_intent_id', @intent_id::text,
                              'observed_external_status', @external_status::text),
           @now
      FROM nf
     WHERE nf.repair_command IS NOT NULL
    RETURNING id
)
SELECT (SELECT id FROM nf), (SELECT id FROM cmd)
