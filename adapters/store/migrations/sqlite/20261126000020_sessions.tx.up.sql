-- Dashboard sessions, shared by every replica. The browser holds a random
-- token; only its keyed hash is stored, as the key. A session ends at
-- expires_at unless it is used before (each use moves it on, up to its
-- maximum age), and as soon as its credential is revoked (checked on use).
-- Times are microseconds since the epoch, as the job queue's.
CREATE TABLE sessions (
    token_hash    BLOB PRIMARY KEY,
    account_id    TEXT NOT NULL,
    credential_id TEXT NOT NULL REFERENCES credentials (id) ON DELETE CASCADE,
    created_at    BIGINT NOT NULL,
    last_seen_at  BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
-- Expired sessions to prune.
CREATE INDEX sessions_expires_idx ON sessions (expires_at);
-- A credential's sessions go with it.
CREATE INDEX sessions_credential_idx ON sessions (credential_id);
