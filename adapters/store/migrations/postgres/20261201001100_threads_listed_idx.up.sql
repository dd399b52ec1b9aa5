-- The listings index on listed_at (see 20261201001000), built CONCURRENTLY,
-- one statement per chunk, outside a transaction (docs/upgrading.md).
DROP INDEX CONCURRENTLY IF EXISTS threads_listed_idx;
--bun:split
CREATE INDEX CONCURRENTLY threads_listed_idx ON threads (account_id, listed_at DESC, id DESC);
