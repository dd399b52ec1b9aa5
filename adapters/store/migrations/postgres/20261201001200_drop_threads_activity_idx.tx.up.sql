-- Listings read threads_listed_idx now; the index on the activity changed
-- with every message and kept updates of threads from being HOT updates.
DROP INDEX IF EXISTS threads_activity_idx;
