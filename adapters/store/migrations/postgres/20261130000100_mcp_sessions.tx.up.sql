-- MCP sessions, shared by every replica, so that a load balancer may send
-- each request of a session to any of them. The client holds a random
-- session id; only its keyed hash is stored, as the key. state is the
-- protocol state a replica resumes the session from (JSON), NULL until
-- the session is initialized. A session ends at expires_at unless a
-- request comes before (each moves it on). Times are microseconds since
-- the epoch, as the job queue uses.
CREATE TABLE mcp_sessions (
    id_hash      BYTEA PRIMARY KEY,
    account_id   TEXT NOT NULL,
    state        TEXT,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
-- The open sessions of an account, counted against its cap.
CREATE INDEX mcp_sessions_account_idx ON mcp_sessions (account_id, expires_at);
-- Expired sessions to prune.
CREATE INDEX mcp_sessions_expires_idx ON mcp_sessions (expires_at);

-- The resources (threads) each session is subscribed to: the replica that
-- holds the session event stream sends the updates, wherever the
-- subscription was made.
CREATE TABLE mcp_session_subscriptions (
    id_hash BYTEA NOT NULL REFERENCES mcp_sessions (id_hash) ON DELETE CASCADE,
    uri     TEXT NOT NULL,
    PRIMARY KEY (id_hash, uri)
);
