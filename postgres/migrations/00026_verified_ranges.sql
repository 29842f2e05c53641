-- A sweep that leaves the application's table alone (issue 20): what was
-- verified, and when, is recorded here, one row per batch, instead of in
-- every row of payments. A verification writes payments'
-- observed_external_status and last_reconciled_at only when the observed
-- status changed, when the row has findings to open or close, when it came
-- from the recheck queue, and otherwise at most once per --verified-refresh
-- (queries/commit_checks.sql).
--
-- Each row is one committed batch of a job: ids is the stretch of payments
-- ids it covered (a full sweep's cursor range (from, to], which the job's
-- ranges partition: the current cycle's up to the cursor, the previous
-- cycle's after it; a recent-window job's batch, in creation order, the
-- span of its rows' ids), read_min and read_max the oldest and newest
-- Stripe answer among its rows (the database's time before Stripe was
-- asked, payrecon.Check.ReadAt). Every row of the range was verified at
-- read_min or later, or is in the job's recheck queue, which says since
-- when it was not (verified_before, taken from here when it is queued).
-- read_max keeps an answer older than one another job already had from
-- being applied (an older answer never overwrites a newer one, whether the
-- newer one wrote payments or not). account is the connected account whose
-- rows the job reads (Connect: each account's job reads only its own rows,
-- interleaved in id order with the others', so the guard compares ranges
-- of the same account only); NULL without Connect.
--
-- A full job's ranges are replaced as its cursor passes them, and those
-- past the end of the table go at the wrap; a recent-window job's go after
-- an hour (record_verified_range.sql, wrap_verified_ranges.sql). No foreign
-- key and nothing added to payments (which may be a view).

-- +goose Up
CREATE TABLE IF NOT EXISTS reconciliation_verified_ranges (
    id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job      text        NOT NULL,
    account  text,
    ids      int8range   NOT NULL,
    read_min timestamptz,
    read_max timestamptz,
    row_count integer    NOT NULL
);

CREATE INDEX IF NOT EXISTS reconciliation_verified_ranges_ids
    ON reconciliation_verified_ranges USING gist (ids);

CREATE INDEX IF NOT EXISTS reconciliation_verified_ranges_job
    ON reconciliation_verified_ranges (job, read_max);

-- The commit's guard against older answers looks only at the ranges read
-- after the oldest answer of its batch: a few, found from here.
CREATE INDEX IF NOT EXISTS reconciliation_verified_ranges_read_max
    ON reconciliation_verified_ranges (read_max);

-- +goose Down
DROP TABLE IF EXISTS reconciliation_verified_ranges;
