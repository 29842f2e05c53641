-- The seed's tables, as the seed writes them. IF NOT EXISTS because payrecon
-- is usually installed into the application's own database, where payments
-- (and perhaps the rest) already exist.

-- +goose Up
CREATE TABLE IF NOT EXISTS payments (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    order_id                 text        NOT NULL,
    stripe_payment_intent_id text        NOT NULL UNIQUE,
    status                   text        NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
    version                  bigint      NOT NULL DEFAULT 0,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    observed_external_status text,         -- Known Applied: the last state confirmed in Stripe
    last_reconciled_at       timestamptz   -- advances only when Stripe was actually read
);
-- An application table that predates payrecon may lack the two columns the
-- reconciler owns. A view standing in for the table (docs/payments-table.md)
-- must have them already: no column can be added to a view, and `payrecon
-- migrate` checks the shape of payments before it runs anything.
-- (Guarded since 00013 was written: on a table it does what it always did.)
-- +goose StatementBegin
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = to_regclass('payments')) IN ('r', 'p') THEN
        ALTER TABLE payments ADD COLUMN IF NOT EXISTS observed_external_status text;
        ALTER TABLE payments ADD COLUMN IF NOT EXISTS last_reconciled_at timestamptz;
    END IF;
END
$$;
-- +goose StatementEnd

CREATE TABLE IF NOT EXISTS reconciliation_cursor (
    job                     text        PRIMARY KEY,
    last_id                 bigint      NOT NULL DEFAULT 0,
    cycle_started_at        timestamptz NOT NULL DEFAULT now(),
    last_cycle_completed_at timestamptz
);

CREATE TABLE IF NOT EXISTS reconciliation_findings (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- REFERENCES payments (id) when payments is a table: added by 00013
    -- (a foreign key cannot reference a view).
    payment_id       bigint      NOT NULL,
    kind             text        NOT NULL,
    local_status     text        NOT NULL,
    external_status  text,
    detected_at      timestamptz NOT NULL DEFAULT now(),
    resolved_at      timestamptz
);
-- One open finding per (payment, kind), however many sweeps see it.
CREATE UNIQUE INDEX IF NOT EXISTS reconciliation_findings_open
    ON reconciliation_findings (payment_id, kind) WHERE resolved_at IS NULL;

-- The seed inserts into outbox but never shows it; this shape also works with
-- Debezium's outbox event router.
CREATE TABLE IF NOT EXISTS outbox (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    event_type     text        NOT NULL,
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS outbox;
DROP TABLE IF EXISTS reconciliation_findings;
DROP TABLE IF EXISTS reconciliation_cursor;
-- payments belongs to the application: never dropped.
