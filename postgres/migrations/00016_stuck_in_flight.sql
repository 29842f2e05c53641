-- Stuck payments (run --stuck-after): when payrecon first observed each row
-- in its current in-flight Stripe status (requires_action,
-- requires_confirmation, processing, requires_capture). The sweep keeps it
-- in the same statement that records its results (commit_checks.sql): a row
-- seen in the same in-flight status keeps its first observation, one seen in
-- another in-flight status starts again, one seen settled is deleted. A row
-- observed continuously in one status longer than its limit gets a
-- stuck_in_flight finding. A table of payrecon's own, not a column of
-- payments (which may be a view); no foreign key for the same reason: the
-- sweep deletes a row's observation when it sees the row settle, and
-- nothing reads an observation without joining payments.

-- +goose Up
CREATE TABLE IF NOT EXISTS payment_inflight_observations (
    payment_id        bigint      PRIMARY KEY,
    stripe_status     text        NOT NULL,
    first_observed_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS payment_inflight_observations;
