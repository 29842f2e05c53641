-- The payrecon processes running now (issue 21, Connect): each `run`
-- replica heartbeats its row every couple of seconds, so that each takes
-- its share of the platform's request budget (--platform-rps divided by
-- the replicas seen recently) and the sum over all of them stays within
-- it. A replica that stops deletes its row; one that dies is no longer
-- counted once its heartbeat is older than a few seconds.

-- +goose Up
CREATE TABLE IF NOT EXISTS payrecon_replicas (
    id          text        PRIMARY KEY,
    started_at  timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS payrecon_replicas;
