-- The console's sessions, kept on the server so that a logout (on any
-- replica) ends one: the cookie is still signed with a key derived from
-- the password (so a password change ends every session), and it is valid
-- only while its row is here. id_hash is the SHA-256 of the random session
-- id the cookie carries: the table alone lets nobody in. Rows past their
-- expiry are deleted when the next session starts.

-- +goose Up
CREATE TABLE IF NOT EXISTS console_sessions (
    id_hash    bytea       PRIMARY KEY,
    operator   text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS console_sessions_expires_at ON console_sessions (expires_at);

-- +goose Down
DROP TABLE IF EXISTS console_sessions;
