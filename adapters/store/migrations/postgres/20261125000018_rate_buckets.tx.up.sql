-- The token buckets of the rate limits, shared by every replica. Unlogged:
-- a bucket lost in a crash is full again, which is what an absent bucket
-- means, and its updates then cost no WAL flush.
CREATE UNLOGGED TABLE rate_buckets (
    key        TEXT PRIMARY KEY,
    tokens     DOUBLE PRECISION NOT NULL,
    -- How many tokens the last take took: one statement refills, takes
    -- and answers it.
    taken      INTEGER NOT NULL,
    updated_at BIGINT NOT NULL
);
-- Idle buckets to prune.
CREATE INDEX rate_buckets_updated ON rate_buckets (updated_at);
