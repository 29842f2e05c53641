-- What the corrected design needs beyond the seed (indexes on payments, the
-- application's busy table, are built concurrently in 00005). Every column added to an
-- existing table has a default (or is nullable), so the application's INSERTs
-- keep working.

-- +goose Up

-- Findings: why and how each was closed, the verdict and reason at detection,
-- and the PaymentIntent id, so that an intent with no local row
-- (missing_locally) can be recorded: payment_id becomes nullable for exactly
-- those, and a second partial unique index keeps them deduplicated.
ALTER TABLE reconciliation_findings
    ALTER COLUMN payment_id DROP NOT NULL,
    ADD COLUMN IF NOT EXISTS stripe_payment_intent_id text,
    ADD COLUMN IF NOT EXISTS job             text,
    ADD COLUMN IF NOT EXISTS verdict         text NOT NULL DEFAULT 'needs_review',
    ADD COLUMN IF NOT EXISTS reason          text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS repair_command  text,
    ADD COLUMN IF NOT EXISTS repair_outcome  text,
    ADD COLUMN IF NOT EXISTS resolution      text,
    ADD COLUMN IF NOT EXISTS resolved_by     text,
    ADD COLUMN IF NOT EXISTS resolution_note text;
ALTER TABLE reconciliation_findings
    ADD CONSTRAINT reconciliation_findings_subject
    CHECK (payment_id IS NOT NULL OR stripe_payment_intent_id IS NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS reconciliation_findings_open_orphan
    ON reconciliation_findings (stripe_payment_intent_id, kind)
    WHERE resolved_at IS NULL AND payment_id IS NULL;
CREATE INDEX IF NOT EXISTS reconciliation_findings_open_kind
    ON reconciliation_findings (kind) WHERE resolved_at IS NULL;
CREATE INDEX IF NOT EXISTS reconciliation_findings_detected
    ON reconciliation_findings (detected_at);
CREATE INDEX IF NOT EXISTS reconciliation_findings_resolved
    ON reconciliation_findings (resolved_at) WHERE resolved_at IS NOT NULL;

-- Cursor: progress and measured throughput of the current and last cycle,
-- for the live B × R > G figure.
ALTER TABLE reconciliation_cursor
    ADD COLUMN IF NOT EXISTS cycle_rows              bigint           NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS cycle_busy_seconds      double precision NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS last_cycle_started_at   timestamptz,
    ADD COLUMN IF NOT EXISTS last_cycle_rows         bigint,
    ADD COLUMN IF NOT EXISTS last_cycle_busy_seconds double precision,
    ADD COLUMN IF NOT EXISTS advanced_at             timestamptz;

-- Outbox delivery state: the row is the record of the command; processed_at
-- and outcome are written in the same transaction as the command's effect.
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS processed_at timestamptz,
    ADD COLUMN IF NOT EXISTS outcome      text,
    ADD COLUMN IF NOT EXISTS last_error   text;
CREATE INDEX IF NOT EXISTS outbox_unprocessed ON outbox (id) WHERE processed_at IS NULL;
-- A finding's repair command (findings show).
CREATE INDEX IF NOT EXISTS outbox_finding ON outbox ((payload->>'finding_id')) WHERE payload ? 'finding_id';

-- Rows the sweep could not judge (Stripe unavailable, changed during the
-- check, inside the grace window): rechecked when due instead of a whole
-- cycle later.
CREATE TABLE reconciliation_recheck (
    job        text        NOT NULL,
    -- REFERENCES payments (id) ON DELETE CASCADE when payments is a table:
    -- added by 00013 (a foreign key cannot reference a view).
    payment_id bigint      NOT NULL,
    reason     text        NOT NULL,
    attempts   integer     NOT NULL DEFAULT 1,
    due_at     timestamptz NOT NULL,
    last_error text,
    PRIMARY KEY (job, payment_id)
);
CREATE INDEX reconciliation_recheck_due ON reconciliation_recheck (job, due_at);

-- +goose Down
DROP TABLE IF EXISTS reconciliation_recheck;
DROP INDEX IF EXISTS outbox_finding;
DROP INDEX IF EXISTS outbox_unprocessed;
ALTER TABLE outbox DROP COLUMN IF EXISTS processed_at, DROP COLUMN IF EXISTS outcome,
    DROP COLUMN IF EXISTS last_error;
ALTER TABLE reconciliation_cursor DROP COLUMN IF EXISTS cycle_rows,
    DROP COLUMN IF EXISTS cycle_busy_seconds, DROP COLUMN IF EXISTS last_cycle_started_at,
    DROP COLUMN IF EXISTS last_cycle_rows, DROP COLUMN IF EXISTS last_cycle_busy_seconds,
    DROP COLUMN IF EXISTS advanced_at;
DROP INDEX IF EXISTS reconciliation_findings_resolved;
DROP INDEX IF EXISTS reconciliation_findings_detected;
DROP INDEX IF EXISTS reconciliation_findings_open_kind;
DROP INDEX IF EXISTS reconciliation_findings_open_orphan;
ALTER TABLE reconciliation_findings DROP CONSTRAINT IF EXISTS reconciliation_findings_subject;
DELETE FROM reconciliation_findings WHERE payment_id IS NULL;
ALTER TABLE reconciliation_findings
    ALTER COLUMN payment_id SET NOT NULL,
    DROP COLUMN IF EXISTS stripe_payment_intent_id, DROP COLUMN IF EXISTS job,
    DROP COLUMN IF EXISTS verdict, DROP COLUMN IF EXISTS reason,
    DROP COLUMN IF EXISTS repair_command, DROP COLUMN IF EXISTS repair_outcome,
    DROP COLUMN IF EXISTS resolution, DROP COLUMN IF EXISTS resolved_by,
    DROP COLUMN IF EXISTS resolution_note;
