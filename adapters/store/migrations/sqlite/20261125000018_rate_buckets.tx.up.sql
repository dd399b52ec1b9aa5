-- The token buckets of the rate limits (one process on SQLite, so only
-- the storage contract and single-process deployments that opt in use it).
CREATE TABLE rate_buckets (
    key        TEXT PRIMARY KEY,
    tokens     REAL NOT NULL,
    -- How many tokens the last take took: one statement refills, takes
    -- and answers it.
    taken      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX rate_buckets_updated ON rate_buckets (updated_at);
