-- The durable job queue. Times are unix microseconds (BIGINT) in both
-- dialects: exact, cheap to compare, and set from the application clock.
CREATE TABLE jobs (
    id               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind             TEXT NOT NULL,
    state            TEXT NOT NULL,
    payload          BYTEA NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    unique_key       TEXT,
    pace_key         TEXT,
    run_at           BIGINT NOT NULL,
    created_at       BIGINT NOT NULL,
    attempted_at     BIGINT,
    finished_at      BIGINT,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    last_error       TEXT
);
-- Due work, in order.
CREATE INDEX jobs_due ON jobs (run_at, id) WHERE state IN ('available', 'retryable');
-- Leases to rescue.
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'running';
-- At most one pending or running job per unique key.
CREATE UNIQUE INDEX jobs_unique_pending ON jobs (unique_key)
    WHERE unique_key IS NOT NULL AND state IN ('available', 'retryable', 'running');
-- Finished work to prune.
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('completed', 'cancelled');
-- Dead jobs to list and re-run.
CREATE INDEX jobs_dead ON jobs (kind, id) WHERE state = 'dead';
