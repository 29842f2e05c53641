-- --repair-mode review: a repair command is recorded in the outbox as
-- always, but held until an operator approves it. held_at says since when
-- it waits; approved_at and approved_by say who let it through (the audit).
-- Its River job is inserted in River's pending state, which no worker
-- fetches (River itself, in every version, is the guard: a replica of an
-- earlier payrecon cannot apply a held command), and approval makes it
-- available in the approving transaction. A held command whose finding
-- closed meanwhile is marked processed with outcome 'dropped: …' and never
-- applied. All three columns are nullable: producers that know nothing of
-- review (earlier versions, other systems writing the outbox) keep working.

-- +goose Up
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS held_at     timestamptz,
    ADD COLUMN IF NOT EXISTS approved_at timestamptz,
    ADD COLUMN IF NOT EXISTS approved_by text;

-- The commands waiting for approval: few, and read by repairs list, status,
-- the console and metrics.
CREATE INDEX IF NOT EXISTS outbox_held ON outbox (id)
    WHERE held_at IS NOT NULL AND approved_at IS NULL AND processed_at IS NULL;

-- +goose Down
DROP INDEX IF EXISTS outbox_held;
ALTER TABLE outbox DROP COLUMN IF EXISTS held_at, DROP COLUMN IF EXISTS approved_at,
    DROP COLUMN IF EXISTS approved_by;
