-- The operator console (payrecon run --admin-addr): a small history of the
-- headline figures for its charts, and the audit trail of what operators did
-- from it.

-- +goose Up

-- One row per minute, written by whichever replica samples first (INSERT …
-- ON CONFLICT DO NOTHING on the minute), pruned by age in bounded batches.
-- open_by_kind holds the open findings per kind at that minute.
CREATE TABLE IF NOT EXISTS console_samples (
    minute         timestamptz PRIMARY KEY,
    lag_seconds    double precision,
    open_findings  bigint      NOT NULL,
    open_by_kind   jsonb       NOT NULL DEFAULT '{}',
    dead_letters   bigint      NOT NULL DEFAULT 0,
    outbox_backlog bigint      NOT NULL DEFAULT 0
);

-- Every action taken from the console, with the operator's name: resolve
-- (with its note), recheck, retry of a dead letter. finding_id is set when
-- the action concerns a finding; job_id for River jobs.
CREATE TABLE IF NOT EXISTS console_audit (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL,
    operator   text        NOT NULL,
    action     text        NOT NULL,
    finding_id bigint,
    job_id     bigint,
    note       text        NOT NULL DEFAULT '',
    outcome    text        NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS console_audit_finding ON console_audit (finding_id, at) WHERE finding_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS console_audit_at ON console_audit (at);

-- The findings list pages by (detected_at, id), newest first (keyset).
CREATE INDEX IF NOT EXISTS reconciliation_findings_detected_id ON reconciliation_findings (detected_at, id);
-- A finding's timeline shows every finding of its payment.
CREATE INDEX IF NOT EXISTS reconciliation_findings_payment ON reconciliation_findings (payment_id);

-- What Stripe said when the finding was recorded (amount, amount_received,
-- currency, charge): written by the money checks (00008); the console shows
-- the money at stake from it. Added here too, idempotently, so either
-- migration may come first.
ALTER TABLE reconciliation_findings ADD COLUMN IF NOT EXISTS details jsonb;

-- +goose Down
DROP INDEX IF EXISTS reconciliation_findings_payment;
DROP INDEX IF EXISTS reconciliation_findings_detected_id;
DROP TABLE IF EXISTS console_audit;
DROP TABLE IF EXISTS console_samples;
-- details stays: the money checks own it too.
